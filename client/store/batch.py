"""Many winning versions written at once: what a pull or an import stores per batch.

:func:`write_versions` stores exactly what one :func:`~sealmem.client.store.rows.write_version`
per version stores (:func:`write_each`, the reference the property tests compare
it with: the same rows, row ids, history sequence and full-text index), with a
few statements per batch instead of four per version:

- the replaced versions go to ``history`` with one statement;
- new rows are inserted with one ``INSERT ... SELECT`` from a staging table
  (:func:`insert_staged`) and changed rows updated with one ``executemany``, in the
  order given, so row ids and history sequence numbers come out the same;
- what the insert triggers of ``memories`` do per row (the row count, the team counts
  per (project, editor), the dirty log; schema version 10) is done once per batch;
- ``memories_fts`` and ``history_fts`` are filled once for the whole batch: while
  ``fts_batch`` holds a row their per-row triggers stand aside (schema version 6),
  the old entries of updated rows whose text changed are deleted and the new text
  of those rows, of every added row and of every added history row is indexed by
  one statement each (an update that keeps the text keeps its index entry);
- supersede links are touched only for the rows whose links changed.

:func:`keep_versions` adds versions that did not win to ``history`` the same way
(:func:`keep_each` is its reference).  The redaction rules run before, in
:mod:`sealmem.client.store.redacting` (the rule itself is
:func:`~sealmem.client.store.redact.redact_version`, the one every write path runs).

A tombstone goes through :func:`~sealmem.client.store.rows.write_version` itself
(rare, and it purges covered text), after the versions before it are written,
so the order of effects is the caller's order.  Every id appears at most once in
a batch, and ``previous`` is its ``memories`` row as read in the same
transaction.  Run inside the caller's transaction.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ...protocol.errors import StoreError
from ...protocol.record import Record
from ..recall.frequent import count_added
from .memory import Provenance
from .rows import (
    HISTORY_COLUMNS,
    MEMORY_COLUMNS,
    MEMORY_VALUE_COLUMNS,
    archived_values,
    covers,
    history_values,
    insert_history,
    memory_row,
    record_from_row,
    record_json,
    write_version,
)

__all__ = [
    "Keep",
    "Write",
    "insert_staged",
    "keep_each",
    "keep_versions",
    "load_rows",
    "write_each",
    "write_versions",
]


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
    bucket_key: int | None = None
    """``record.id``'s bucket key (:func:`~sealmem.protocol.snapshot.bucket_key`), stored
    with a new row (None: the next push fills it; a row already there keeps its own)."""


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
            bucket_key=w.bucket_key,
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


_COLUMN = {name: i for i, name in enumerate(MEMORY_VALUE_COLUMNS)}
_ID, _CONTENT, _KEYWORDS = _COLUMN["id"], _COLUMN["content"], _COLUMN["keywords"]
_UPDATE = (
    "UPDATE memories SET "
    + ", ".join(f"{name} = ?" for name in MEMORY_VALUE_COLUMNS if name != "id")
    + " WHERE id = ?"
)


def _flush(conn: sqlite3.Connection, run: Sequence[Write]) -> None:
    """Write live versions (no tombstone among them) with a few statements."""
    if not run:
        return
    if len({w.record.id for w in run}) != len(run):
        raise StoreError("a batch of writes names one memory id twice; write it in two batches")
    rows = [
        memory_row(
            w.record,
            provenance=w.provenance,
            local_importance=w.local_importance,
            seen_count=w.seen_count,
            updated_at=w.updated_at,
        )
        for w in run
    ]
    added = [(*v, w.bucket_key) for v, w in zip(rows, run, strict=True) if w.previous is None]
    changed = [(v, w.previous) for v, w in zip(rows, run, strict=True) if w.previous is not None]
    with _triggers_aside(conn):
        # the replaced versions, in order (a live version never covers text: archive all)
        insert_staged(
            conn,
            "history",
            HISTORY_COLUMNS,
            [archived_values(prev, w.updated_at) for w in run if (prev := w.previous) is not None],
        )
        (last,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()
        if added:
            insert_staged(conn, "memories", (*MEMORY_VALUE_COLUMNS, "bucket_key"), added)
            _count_added(conn, added)
        # an update that keeps the text (a reinforce, an importance) keeps its index entry
        retext = [
            (v, p)
            for v, p in changed
            if (v[_CONTENT], v[_KEYWORDS]) != (p["content"], p["keywords"])
        ]
        if retext:
            conn.executemany(
                "INSERT INTO memories_fts (memories_fts, rowid, content, keywords) "
                "VALUES ('delete', ?, ?, ?)",
                [(p["rowid"], p["content"], p["keywords"]) for _, p in retext],
            )
        if changed:
            conn.executemany(_UPDATE, [(*v[1:], v[_ID]) for v, _ in changed])
        if added:  # they hold every rowid above the last one before them
            conn.execute(
                "INSERT INTO memories_fts (rowid, content, keywords) "
                "SELECT rowid, content, keywords FROM memories WHERE rowid > ?",
                (last,),
            )
        if retext:
            conn.execute(
                "INSERT INTO memories_fts (rowid, content, keywords) "
                "SELECT rowid, content, keywords FROM memories "
                "WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([v[_ID] for v, _ in retext]),),
            )
    _relink(conn, run)


def insert_staged(
    conn: sqlite3.Connection,
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
) -> None:
    """Insert ``rows`` (values of ``columns``) into ``table`` in their order, with one
    ``INSERT ... SELECT`` from a per-connection ``TEMP`` table they are first put in.

    Not one ``INSERT`` per row (``executemany``): each execution of an ``INSERT`` into a
    table with triggers opens a statement journal, and copies into it every page it is
    the first to touch (``memories`` has 9 indexes: ~16 µs a row of a 20 µs insert);
    one statement journals each page once.  The staging table holds no constraint and
    no affinity, so the values reach ``table`` as they were given."""
    if not rows:
        return
    names = ", ".join(columns)
    stage = f"temp.staged_{zlib.crc32(f'{table} ({names})'.encode()):08x}"
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {stage.partition('.')[2]} ({names})")
    try:
        conn.executemany(
            f"INSERT INTO {stage} ({names}) VALUES ({', '.join('?' * len(columns))})", rows
        )
        conn.execute(
            f"INSERT INTO main.{table} ({names}) SELECT {names} FROM {stage} ORDER BY rowid"
        )
    finally:
        conn.execute(f"DELETE FROM {stage}")


_OWN_COUNTS_ADD = (
    "INSERT INTO own_counts (project, editor, rows, live) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (project, editor) DO UPDATE SET "
    "rows = rows + excluded.rows, live = live + excluded.live"
)
_PROJECT, _EDITOR = _COLUMN["project"], _COLUMN["editor"]
_STEMS = _COLUMN["stems"]
_VISIBILITY, _DELETED = _COLUMN["visibility"], _COLUMN["deleted"]


def _count_added(conn: sqlite3.Connection, added: Sequence[Sequence[Any]]) -> None:
    """What the insert triggers of ``memories`` do per row (schema versions 7, 8 and 10;
    they stand aside while ``fts_batch`` holds a row), once for the rows ``added``: the
    row count, the team counts per (project, editor), and the dirty log of the rows of
    the member this store pushes as (every team row while none is named)."""
    conn.execute("UPDATE store_counts SET memories = memories + ?", (len(added),))
    count_added(conn, [v[_STEMS] for v in added])  # recall's frequent terms (version 12)
    team = [v for v in added if v[_VISIBILITY] == "team"]
    counts: dict[tuple[str, str], list[int]] = {}
    for v in team:
        n = counts.setdefault((v[_PROJECT], v[_EDITOR]), [0, 0])
        n[0] += 1
        n[1] += not v[_DELETED]
    conn.executemany(_OWN_COUNTS_ADD, [(p, e, n, live) for (p, e), (n, live) in counts.items()])
    row = conn.execute("SELECT editor FROM push_editor").fetchone()
    conn.executemany(
        "INSERT INTO push_dirty (project, id) VALUES (?, ?)",
        [(v[_PROJECT], v[_ID]) for v in team if row is None or v[_EDITOR] == row[0]],
    )


_HISTORY_FTS_FILL = """
INSERT INTO history_fts (rowid, content, keywords)
SELECT seq,
       coalesce(json_extract(record_json, '$.content'), ''),
       coalesce((SELECT group_concat(value, ' ') FROM json_each(record_json, '$.keywords')), '')
FROM history WHERE seq > ?
"""


@contextmanager
def _triggers_aside(conn: sqlite3.Connection) -> Iterator[None]:
    """The per-row full-text triggers and the insert triggers that count and log
    ``memories`` rows stand aside (``fts_batch``); the caller fills ``memories_fts`` and
    counts and logs the rows it inserts (:func:`_count_added`), and the ``history`` rows
    added meanwhile are indexed here, at once."""
    (last,) = conn.execute("SELECT coalesce(max(seq), 0) FROM history").fetchone()
    conn.execute("INSERT INTO fts_batch (one) VALUES (1)")
    try:
        yield
    finally:
        conn.execute("DELETE FROM fts_batch")
    conn.execute(_HISTORY_FTS_FILL, (last,))


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


def load_rows(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, sqlite3.Row]:
    """The ``memories`` rows of ``ids`` (those that exist), in one query."""
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(set(ids))),),
    ).fetchall()
    return {str(row["id"]): row for row in rows}


@dataclass(frozen=True, slots=True)
class Keep:
    """A version that did not win, for ``history``, with its local state."""

    record: Record
    provenance: Provenance
    local_importance: float
    seen_count: int
    updated_at: int
    replaced_at: int


def keep_each(conn: sqlite3.Connection, keeps: Sequence[Keep], *, skip_winner: bool) -> int:
    """The reference: each version added to ``history`` in turn unless the same version
    is there already (or, with ``skip_winner``, is the memory's winner), or its text is
    covered by the winning tombstone; returns how many were added."""
    added = 0
    for k in keeps:
        text = record_json(k.record)
        seen = conn.execute(
            "SELECT 1 FROM history WHERE id = ? AND record_json = ? LIMIT 1", (k.record.id, text)
        ).fetchone()
        if seen is not None:
            continue
        if skip_winner:
            current = load_rows(conn, [k.record.id]).get(k.record.id)
            if current is not None and record_from_row(current) == k.record:
                continue
        added += insert_history(
            conn,
            k.record,
            provenance=k.provenance,
            local_importance=k.local_importance,
            seen_count=k.seen_count,
            updated_at=k.updated_at,
            replaced_at=k.replaced_at,
        )
    return added


def keep_versions(conn: sqlite3.Connection, keeps: Sequence[Keep], *, skip_winner: bool) -> int:
    """:func:`keep_each`, with one read of the winners and of the kept versions of the
    batch's ids and one ``executemany``; returns how many were added."""
    if not keeps:
        return 0
    ids = sorted({k.record.id for k in keeps})
    current = load_rows(conn, ids)
    seen = {
        (str(r[0]), str(r[1]))
        for r in conn.execute(
            "SELECT id, record_json FROM history WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
    }
    values = []
    for k in keeps:
        key = (k.record.id, record_json(k.record))
        if key in seen:
            continue
        row = current.get(k.record.id)
        if row is not None:
            if skip_winner and record_from_row(row) == k.record:
                continue
            tomb = bool(row["deleted"]) and not k.record.deleted
            if tomb and covers(str(row["editor"]), str(row["transport"]), k.record.editor):
                continue
        seen.add(key)
        values.append(
            history_values(
                k.record,
                provenance=k.provenance,
                local_importance=k.local_importance,
                seen_count=k.seen_count,
                updated_at=k.updated_at,
                replaced_at=k.replaced_at,
            )
        )
    if values:
        with _triggers_aside(conn):
            insert_staged(conn, "history", HISTORY_COLUMNS, values)
    return len(values)
