"""Redacting again, before a push, the versions of ours it would publish for the first time.

Newer rules may catch a secret an older sealmem let in.  A version whose text this
store's rules already redacted (its ``redaction_marks`` row names it: a pull, an import,
or this module before) is not redacted again.
"""

from __future__ import annotations

import sqlite3

from ...protocol.hlc import Hlc
from ...protocol.record import Record
from ..store.memory import Provenance
from ..store.redacting import check_rules, mark_redacted, redact_version, rules_current
from ..store.rows import load_row, next_hlc, record_from_row
from ..store.writer import write_version
from .replica import PUBLISHABLE

__all__ = ["needs_redaction", "redact_pending", "reredact"]

_UNMARKED = """
SELECT 1 FROM memories AS m LEFT JOIN redaction_marks AS k ON k.id = m.id
WHERE m.project = ? AND m.editor = ? AND m.visibility = 'team'
  AND (m.hlc_wall, m.hlc_counter) > (?, ?)
  AND (k.id IS NULL OR k.hlc_wall != m.hlc_wall OR k.hlc_counter != m.hlc_counter
       OR k.editor != m.editor)
LIMIT 1
"""

_PENDING = """
SELECT m.*, k.hlc_wall = m.hlc_wall AND k.hlc_counter = m.hlc_counter AND k.editor = m.editor
       AS marked
FROM memories AS m LEFT JOIN redaction_marks AS k ON k.id = m.id
WHERE m.project = ? AND m.editor = ? AND m.visibility = 'team'
  AND (m.hlc_wall, m.hlc_counter) > (?, ?)
ORDER BY m.id
"""


def needs_redaction(conn: sqlite3.Connection, me: str, project: str, since: Hlc) -> bool:
    """Whether :func:`redact_pending` has anything to do: a publishable version of ``me``
    newer than ``since`` that is not marked, or marks made under other rules.  Read
    only, so that a sync with nothing new opens no write transaction for it (and, with
    no unpushed version at all, does not load the rules)."""
    args = (project, me, since.wall, since.counter)
    newer = f"SELECT 1 {PUBLISHABLE} AND (hlc_wall, hlc_counter) > (?, ?) LIMIT 1"
    if conn.execute(newer, args).fetchone() is None:
        return False
    if not rules_current(conn):
        return True
    return conn.execute(_UNMARKED, args).fetchone() is not None


def redact_pending(conn: sqlite3.Connection, me: str, project: str, since: Hlc, now: int) -> int:
    """Redact again the publishable versions of ``me`` newer than ``since`` (not pushed
    yet); a changed one is stored as a new local version.  Return how many changed.

    Run in its own transaction before a push is planned, so that the push itself only
    reads the store.  One found clean, or stored cleaned, is marked (a push that did not
    land, or found nothing to publish, does not run the rules over it again).
    """
    check_rules(conn)  # marks made under other rules are gone before they are read
    rows = conn.execute(_PENDING, (project, me, since.wall, since.counter)).fetchall()
    pending = [record_from_row(row) for row in rows if not row["marked"]]
    changed = 0
    marks: list[tuple[str, int, int, str]] = []
    for record in pending:
        cleaned = reredact(conn, record, me, now)
        changed += cleaned is not record
        marks.append((cleaned.id, *cleaned.order_key))
    mark_redacted(conn, marks)
    return changed


def reredact(conn: sqlite3.Connection, record: Record, me: str, now: int) -> Record:
    """``record`` with secrets redacted again; a changed one is stored as a new local version."""
    redacted, found = redact_version(record)  # the one call site of the rules
    if not found:
        return record
    row = load_row(conn, record.id)
    cleaned = redacted.evolve(editor=me, hlc=next_hlc(conn, now))
    write_version(
        conn,
        cleaned,
        provenance=Provenance.local(),
        local_importance=cleaned.importance if row is None else float(row["local_importance"]),
        seen_count=1 if row is None else int(row["seen_count"]),
        updated_at=now,
    )
    return cleaned
