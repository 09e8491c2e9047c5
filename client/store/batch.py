"""Many winning versions written at once: what a pull or an import stores per batch.

:func:`write_versions` stores exactly what one :func:`~sealmem.client.store.rows.write_version`
per version stores (:func:`write_each`, the reference the property tests compare
it with: the same rows, row ids, history sequence and full-text index), with a
few statements per batch instead of four per version:

- the replaced versions go to ``history`` with one ``executemany``;
- new rows are inserted and changed rows updated with one ``executemany`` each,
  in the order given, so row ids and history sequence numbers come out the same;
- ``memories_fts`` is filled once for the whole batch: while ``fts_batch`` holds
  a row its per-row triggers stand aside (schema version 6), the old entries of
  updated rows are deleted and the new text of every written row is indexed by
  one statement each;
- supersede links are touched only for the rows whose links changed.

A tombstone goes through :func:`~sealmem.client.store.rows.write_version` itself
(rare, and it purges covered text), after the versions before it are written,
so the order of effects is the caller's order.  Every id appears at most once in
a batch, and ``previous`` is its ``memories`` row as read in the same
transaction.  Run inside the caller's transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from ...protocol.errors import StoreError
from ...protocol.record import Record
from .memory import Provenance
from .rows import HISTORY_INSERT, archived_values, memory_values, write_version

__all__ = ["Write", "write_each", "write_versions"]


@dataclass(frozen=True, slots=True)
class Write:
    """One version to make the winner of its id, with its local state."""

    record: Record
    provenance: Provenance
    local_importance: float
    seen_count: int
    updated_at: int
    previous: sqlite3.Row | None
    """The ``memories`` row of ``record.id`` before this write (None: there is none)."""


def write_each(conn: sqlite3.Connection, writes: Sequence[Write]) -> int:
    """The reference: one :func:`write_version` per write; returns versions purged."""
    purged = 0
    for w in writes:
        purged += write_version(
            conn,
            w.record,
            provenance=w.provenance,
            local_importance=w.local_importance,
            seen_count=w.seen_count,
            updated_at=w.updated_at,
        )
    return purged


def write_versions(conn: sqlite3.Connection, writes: Sequence[Write]) -> int:
    """Write ``writes`` in order, batched (see the module docstring); returns versions
    purged (when not 0, run :func:`sealmem.client.store.scrub.settle` after committing)."""
    purged = 0
    run: list[Write] = []
    for w in writes:
        if w.record.deleted:
            _flush(conn, run)
            run = []
            purged += write_each(conn, [w])
        else:
            run.append(w)
    _flush(conn, run)
    return purged


def _flush(conn: sqlite3.Connection, run: Sequence[Write]) -> None:
    """Write live versions (no tombstone among them) with a few statements."""
    if not run:
        return
    if len({w.record.id for w in run}) != len(run):
        raise StoreError("a batch of writes names one memory id twice; write it in two batches")
    values = [
        memory_values(
            w.record,
            provenance=w.provenance,
            local_importance=w.local_importance,
            seen_count=w.seen_count,
            updated_at=w.updated_at,
        )
        for w in run
    ]
    names = list(values[0])
    added = [v for v, w in zip(values, run, strict=True) if w.previous is None]
    changed = [(v, w.previous) for v, w in zip(values, run, strict=True) if w.previous is not None]
    conn.execute("INSERT INTO fts_batch (one) VALUES (1)")
    try:
        # the replaced versions, in order (a live version never covers text: archive all)
        conn.executemany(
            HISTORY_INSERT,
            [archived_values(prev, v["updated_at"]) for v, prev in changed],
        )
        if added:
            marks = ", ".join(f":{name}" for name in names)
            conn.executemany(f"INSERT INTO memories ({', '.join(names)}) VALUES ({marks})", added)
        if changed:
            conn.executemany(
                "INSERT INTO memories_fts (memories_fts, rowid, content, keywords) "
                "VALUES ('delete', ?, ?, ?)",
                [(p["rowid"], p["content"], p["keywords"]) for _, p in changed],
            )
            sets = ", ".join(f"{name} = :{name}" for name in names if name != "id")
            conn.executemany(f"UPDATE memories SET {sets} WHERE id = :id", [v for v, _ in changed])
        conn.execute(
            "INSERT INTO memories_fts (rowid, content, keywords) "
            "SELECT rowid, content, keywords FROM memories "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([v["id"] for v in values]),),
        )
    finally:
        conn.execute("DELETE FROM fts_batch")
    _relink(conn, run)


def _relink(conn: sqlite3.Connection, run: Sequence[Write]) -> None:
    """Supersede links of live winners: only the rows whose links changed are touched."""
    stale: list[tuple[str]] = []
    links: list[tuple[str, str]] = []
    for w in run:
        record, prev = w.record, w.previous
        if prev is not None:
            same = not prev["deleted"] and json.loads(prev["supersedes_json"]) == list(
                record.supersedes
            )
            if same:
                continue
            stale.append((record.id,))
        links.extend((old, record.id) for old in record.supersedes)
    conn.executemany("DELETE FROM supersedes WHERE new_id = ?", stale)
    conn.executemany("INSERT OR IGNORE INTO supersedes (old_id, new_id) VALUES (?, ?)", links)
