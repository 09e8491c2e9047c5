"""The redaction rules over versions from outside: what a pull, an import and a push run.

:func:`redact_version` (the one rule every write path runs) redacts a version this
store did not write (a pulled or imported one, or our own before its first push);
:func:`redact_versions` runs it over a batch, skipping text this store's rules already
redacted: ``redaction_marks`` names, per memory id, the version whose text these rules
wrote into ``memories`` or found clean there, under the rules version ``meta`` names.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from ...protocol.record import Record
from .connection import get_meta, set_meta
from .redact import redact_batch, redact_version

__all__ = [
    "check_rules",
    "mark_redacted",
    "redact_version",
    "redact_versions",
    "rules_current",
]


_MARKED = """
SELECT m.id, m.content, m.keywords_json, m.delete_reason, m.hlc_wall, m.hlc_counter, m.editor,
       k.hlc_wall = m.hlc_wall AND k.hlc_counter = m.hlc_counter AND k.editor = m.editor
FROM memories AS m LEFT JOIN redaction_marks AS k ON k.id = m.id
WHERE m.id IN (SELECT value FROM json_each(?))
"""


def redact_versions(
    conn: sqlite3.Connection, records: Iterable[Record]
) -> list[tuple[Record, dict[str, int]]]:
    """:func:`redact_version` of each record, in order, without running the rules over
    text this store's rules already redacted.

    The rules are skipped for a version whose content, keywords and delete reason equal
    those of its id's ``memories`` row *and* that row is marked: its text was written
    there by this function's caller after these rules ran (or these rules found it
    clean), under the rules version ``meta`` names.  A re-pull, a re-import, or an
    update that changes only metadata (importance, a reinforce) then costs one
    comparison.  Nothing a teammate or a file says is trusted: a mark is this store's
    own record of its own redaction, compared with this store's own text.  A rules
    change (:data:`~sealmem.client.store.redaction.RULES_VERSION`) clears every mark.

    A version is marked when it is newer than its id's row (it will be written, as
    redacted here, if it wins the merge), and a row when the redacted text equals its
    text (that text is clean under these rules).  Run inside the caller's transaction:
    if it rolls back, so do the marks.
    """
    records = list(records)
    if not records:
        return []
    check_rules(conn)
    rows = {
        str(row[0]): row
        for row in conn.execute(_MARKED, (json.dumps(sorted({r.id for r in records})),))
    }
    out: list[tuple[Record, dict[str, int]] | None] = []
    todo: list[Record] = []
    for record in records:
        row = rows.get(record.id)
        if row is not None and row[7] and _same_text(record, row):
            out.append((record, {}))
        else:
            out.append(None)
            todo.append(record)
    done = iter(redact_batch(todo))
    marks: list[tuple[str, int, int, str]] = []
    for i, kept in enumerate(out):
        if kept is not None:
            continue
        cleaned, _ = out[i] = next(done)
        row = rows.get(cleaned.id)
        key = cleaned.order_key
        if row is None or key > (int(row[4]), int(row[5]), str(row[6])):
            marks.append((cleaned.id, *key))
        elif _same_text(cleaned, row):
            marks.append((cleaned.id, int(row[4]), int(row[5]), str(row[6])))
    mark_redacted(conn, marks)
    return [pair for pair in out if pair is not None]


def mark_redacted(conn: sqlite3.Connection, marks: Iterable[tuple[str, int, int, str]]) -> None:
    """Mark versions (id, HLC wall, HLC counter, editor) as holding text this store's
    rules redacted (or found clean), under the rules :func:`check_rules` made current."""
    conn.executemany(
        "INSERT OR REPLACE INTO redaction_marks (id, hlc_wall, hlc_counter, editor) "
        "VALUES (?, ?, ?, ?)",
        marks,
    )


def _same_text(record: Record, row: sqlite3.Row) -> bool:
    """Whether ``record`` holds the text (content, keywords, delete reason) of ``row``."""
    return bool(
        record.content == row[1]
        and record.delete_reason == row[3]
        and json.loads(row[2]) == list(record.keywords)
    )


def rules_current(conn: sqlite3.Connection) -> bool:
    """Whether the marks were made under the rules this process runs."""
    from .redaction import RULES_VERSION  # here: the rules load only where they run

    return get_meta(conn, "redaction_rules") == RULES_VERSION


def check_rules(conn: sqlite3.Connection) -> None:
    """Clear the marks when they were made under other rules than this process runs."""
    from .redaction import RULES_VERSION

    if get_meta(conn, "redaction_rules") != RULES_VERSION:
        conn.execute("DELETE FROM redaction_marks")
        set_meta(conn, "redaction_rules", RULES_VERSION)
