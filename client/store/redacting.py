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
from collections.abc import Iterable, Mapping

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


def redact_versions(
    conn: sqlite3.Connection, records: Iterable[Record], held: Mapping[str, Record]
) -> list[tuple[Record, dict[str, int]]]:
    """:func:`redact_version` of each record, in order, without running the rules over
    text this store's rules already redacted.

    ``held``: the version this store's ``memories`` row holds for each id that has one
    (the caller read them; they are not read again).  The rules are skipped for a
    version whose content, keywords and delete reason equal those of its id's held
    version *and* that version is marked: its text was written there by this function's
    caller after these rules ran (or these rules found it clean), under the rules
    version ``meta`` names.  A re-pull, a re-import, or an update that changes only
    metadata (importance, a reinforce) then costs one comparison.  Nothing a teammate or
    a file says is trusted: a mark is this store's own record of its own redaction,
    compared with this store's own text.  A rules change
    (:data:`~sealmem.client.store.redaction.RULES_VERSION`) clears every mark.

    A version is marked when it is newer than its id's held one (it will be written, as
    redacted here, if it wins the merge), and a held one when the redacted text equals
    its text (that text is clean under these rules).  Run inside the caller's
    transaction: if it rolls back, so do the marks.
    """
    records = list(records)
    if not records:
        return []
    check_rules(conn)
    marked = {
        str(mid): (int(wall), int(counter), str(editor))
        for mid, wall, counter, editor in conn.execute(
            "SELECT id, hlc_wall, hlc_counter, editor FROM redaction_marks "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted({r.id for r in records if r.id in held})),),
        )
    }
    out: list[tuple[Record, dict[str, int]] | None] = []
    todo: list[Record] = []
    for record in records:
        mine = held.get(record.id)
        if (
            mine is not None
            and marked.get(record.id) == mine.order_key
            and _same_text(record, mine)
        ):
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
        mine = held.get(cleaned.id)
        if mine is None or cleaned.order_key > mine.order_key:
            marks.append((cleaned.id, *cleaned.order_key))
        elif _same_text(cleaned, mine):
            marks.append((cleaned.id, *mine.order_key))
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


def _same_text(record: Record, held: Record) -> bool:
    """Whether ``record`` holds the text (content, keywords, delete reason) of ``held``."""
    return (
        record.content == held.content
        and record.delete_reason == held.delete_reason
        and record.keywords == held.keywords
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
