"""The one writer of ``memories`` and ``history``: every write is a :class:`Batch`.

A remember, a reinforce, a share, a forget, a pull's chunk, an import, a re-redaction,
the drop of a revoked writer's versions: each builds a batch and calls :func:`write`
(a single write is a batch of one, :func:`write_version`).  The writer stores the
rows with a few statements per batch and hands what changed to the keepers of the
derived tables (:mod:`sealmem.client.store.derived`), once per batch.

In a batch, in this order:

- ``writes``: versions that become the winner of their id (each id once), with their
  local state; the version they replace goes to ``history``, and the supersede links
  follow the winner.  A forgotten memory keeps no text its forgetter may erase: a
  tombstone *covers* (:func:`~.rows.covers`) every version when written here, a
  teammate's the versions that teammate wrote; the covered versions leave ``history``
  (counted in :attr:`Written.purged`: when not 0, run
  :func:`sealmem.client.store.scrub.settle` after committing);
- ``keeps``: versions that did not win, added to ``history`` unless the same version is
  there, or (``skip_winner``) is its id's winner, or its text is covered by the
  winning tombstone;
- ``local``: local state only (seen count, importance floor, update time), which no
  derived table reads;
- ``removed``: winners that leave ``memories`` (kept in ``history``);
- ``unkept``: ``history`` rows (by ``seq``) that leave it, being winners again.

Run inside the caller's transaction.  The rows handed in (``Write.previous``,
``removed``) are read with :data:`~.rows.MEMORY_COLUMNS` (:func:`load_rows`).
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ...protocol.errors import StoreError
from ...protocol.record import Record
from . import derived
from .derived import Row
from .memory import Provenance
from .rows import (
    HISTORY_COLUMNS,
    MEMORY_COLUMNS,
    MEMORY_VALUE_COLUMNS,
    archived_values,
    at,
    covers,
    history_values,
    listed,
    memory_row,
    record_from_row,
    record_json,
)
from .text import read_rows

__all__ = [
    "Batch",
    "Keep",
    "Local",
    "Write",
    "Written",
    "load_rows",
    "write",
    "write_version",
]


@dataclass(slots=True)
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
    replaced: Record | None = None
    """The version ``previous`` holds, when the caller has read it (else read here)."""


@dataclass(slots=True)
class Keep:
    """A version that did not win, for ``history``, with its local state."""

    record: Record
    provenance: Provenance
    local_importance: float
    seen_count: int
    updated_at: int
    replaced_at: int


@dataclass(slots=True)
class Local:
    """New local state of a winner (None: unchanged); no new version."""

    id: str
    local_importance: float | None = None
    seen_count: int | None = None
    updated_at: int | None = None


@dataclass(frozen=True)
class Batch:
    """What one call of :func:`write` stores (see the module docstring)."""

    writes: Sequence[Write] = ()
    keeps: Sequence[Keep] = ()
    skip_winner: bool = False
    local: Sequence[Local] = ()
    removed: Sequence[sqlite3.Row] = ()
    unkept: Sequence[int] = ()
    replaced_at: int = 0
    """When the ``removed`` winners were replaced (their history rows say so)."""


@dataclass
class Written:
    """What :func:`write` did."""

    purged: int = 0
    """Versions with content that left the store because a tombstone won."""


def write(conn: sqlite3.Connection, batch: Batch) -> Written:
    """Store ``batch`` (see the module docstring); inside the caller's transaction."""
    out = Written()
    if batch.writes:
        out.purged = _winners(conn, batch.writes)
    if batch.keeps:
        _keep(conn, batch.keeps, skip_winner=batch.skip_winner)
    if batch.local:
        conn.executemany(
            "UPDATE memories SET local_importance = coalesce(?, local_importance), "
            "seen_count = coalesce(?, seen_count), updated_at = coalesce(?, updated_at) "
            "WHERE id = ?",
            [(v.local_importance, v.seen_count, v.updated_at, v.id) for v in batch.local],
        )
    if batch.removed:
        _remove(conn, batch.removed, batch.replaced_at)
    if batch.unkept:
        derived.history_removed(conn, batch.unkept)
        conn.executemany("DELETE FROM history WHERE seq = ?", [(s,) for s in batch.unkept])
    return out


def write_version(
    conn: sqlite3.Connection,
    record: Record,
    *,
    provenance: Provenance,
    local_importance: float,
    seen_count: int,
    updated_at: int,
    bucket_key: int | None = None,
) -> int:
    """Make ``record`` the winner of its id: a batch of one write; returns versions purged."""
    previous = load_rows(conn, [record.id]).get(record.id)
    one = Write(record, provenance, local_importance, seen_count, updated_at, previous, bucket_key)
    return write(conn, Batch(writes=[one])).purged


_OTHERS = range(1, len(MEMORY_VALUE_COLUMNS))  # the columns but id, the first
_EDITED = at("deleted", "editor", "content", "keywords", "supersedes_json", "stems")


def _same_text(record: Record, prev: sqlite3.Row | None) -> sqlite3.Row | None:
    """``prev`` when it holds ``record``'s text with its stems (they are then reused)."""
    if prev is None:
        return None
    deleted, _, content, keywords, _, stems = _EDITED(prev)
    if deleted or stems is None or content != record.content:
        return None
    return prev if keywords == " ".join(record.keywords) else None


def _winners(conn: sqlite3.Connection, writes: Sequence[Write]) -> int:
    if len({w.record.id for w in writes}) != len(writes):
        raise StoreError("a batch of writes names one memory id twice; write it in two batches")
    values = [
        memory_row(
            w.record,
            provenance=w.provenance,
            local_importance=w.local_importance,
            seen_count=w.seen_count,
            updated_at=w.updated_at,
            same_text=_same_text(w.record, w.previous),
        )
        for w in writes
    ]
    purged = _archive(conn, writes)
    pairs = list(zip(values, writes, strict=True))
    added = [(*v, w.bucket_key) for v, w in pairs if w.previous is None]
    changed = [(v, w.previous) for v, w in pairs if w.previous is not None]
    after = _insert(conn, "memories", (*MEMORY_VALUE_COLUMNS, "bucket_key"), added)
    _update(conn, changed)
    derived.memories_changed(
        conn,
        after=after,
        inserted=[Row(v) for v in added],
        replaced=[(Row(p), Row(v), int(p["rowid"])) for v, p in changed],
        deleted=[],
    )
    _relink(conn, writes)
    return purged


def _archive(conn: sqlite3.Connection, writes: Sequence[Write]) -> int:
    """The versions ``writes`` replace into ``history``, but the text a tombstone covers,
    which leaves ``history`` too; returns how many versions with content left."""
    archived: list[tuple[Any, ...]] = []
    texts: list[tuple[str, str]] = []
    purges: list[tuple[str, str | None]] = []
    purged = 0
    for w in writes:
        prev, record = w.previous, w.record
        # whose text a tombstone erases here: every version (forget), or its writer's own
        only = None if w.provenance.transport == "local" else record.editor
        if prev is not None:
            deleted, editor, content, keywords, _, _ = _EDITED(prev)
            if record.deleted and not deleted and (only is None or editor == only):
                purged += 1  # the text it replaces is covered: not archived
            else:
                archived.append(archived_values(prev, w.updated_at, w.replaced))
                texts.append((content, keywords))
        if record.deleted:
            purges.append((record.id, only))
    purged += _purge(conn, purges)
    _insert_history(conn, archived, texts)
    return purged


def _update(conn: sqlite3.Connection, changed: Sequence[tuple[Sequence[Any], sqlite3.Row]]) -> None:
    """Rewrite the ``changed`` rows, each only in the columns whose value changed (an
    index none of whose columns changed is then not touched)."""
    groups: dict[tuple[int, ...], list[list[Any]]] = {}
    for v, p in changed:
        old = p[1:]  # the values of MEMORY_VALUE_COLUMNS
        differ = tuple(i for i in _OTHERS if v[i] != old[i])
        if differ:
            groups.setdefault(differ, []).append([*(v[i] for i in differ), v[0]])
    for differ, rows in groups.items():
        sets = ", ".join(f"{MEMORY_VALUE_COLUMNS[i]} = ?" for i in differ)
        conn.executemany(f"UPDATE memories SET {sets} WHERE id = ?", rows)


def _purge(conn: sqlite3.Connection, purges: Sequence[tuple[str, str | None]]) -> int:
    """Delete the versions with content of each id in ``history`` (only those the editor
    given wrote); earlier tombstones stay.  Returns how many left."""
    seqs: list[int] = []
    content = "coalesce(json_extract(record_json, '$.deleted'), 0) = 0"
    editor_is = "json_extract(record_json, '$.editor')"
    for memory_id, editor in purges:
        # editor None: every editor's versions (json_extract is never NULL for a record)
        deleted = conn.execute(
            f"DELETE FROM history WHERE id = ? AND {content} "
            f"AND {editor_is} = coalesce(?, {editor_is}) "
            "RETURNING seq",
            (memory_id, editor),
        )
        seqs += [int(seq) for (seq,) in deleted]
    if seqs:
        derived.history_removed(conn, seqs)
    return len(seqs)


def _insert_history(
    conn: sqlite3.Connection, values: Sequence[Sequence[Any]], texts: Sequence[tuple[str, str]]
) -> None:
    """Add ``values`` to ``history``, their ``texts`` (content, space-joined keywords) to
    its index: a new row takes the ``seq`` after the last one, in order."""
    after = _insert(conn, "history", HISTORY_COLUMNS, values)
    if after is not None:
        derived.history_added(conn, after, texts)


def _insert(
    conn: sqlite3.Connection,
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
) -> int | None:
    """Insert ``rows`` (values of ``columns``) into ``table`` in their order; returns the
    rowid before theirs (they take the next ones), None when there are none.

    Several rows go in with one ``INSERT ... SELECT`` from a per-connection ``TEMP``
    table they are first put in, not one ``INSERT`` each (``executemany``): each
    execution of an ``INSERT`` opens a statement journal, and copies into it every page
    it is the first to touch (``memories`` has 10 indexes); one statement journals each
    page once.  The staging table holds no constraint and no affinity, so the values
    reach ``table`` as given."""
    if not rows:
        return None
    names = ", ".join(columns)
    marks = ", ".join("?" * len(columns))
    if len(rows) == 1:
        cur = conn.execute(f"INSERT INTO main.{table} ({names}) VALUES ({marks})", rows[0])
        return int(cur.lastrowid or 0) - 1
    stage = f"staged_{zlib.crc32(f'{table} ({names})'.encode()):08x}"
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {stage} ({names})")
    try:
        conn.executemany(f"INSERT INTO temp.{stage} ({names}) VALUES ({marks})", rows)
        cur = conn.execute(
            f"INSERT INTO main.{table} ({names}) SELECT {names} FROM temp.{stage} ORDER BY rowid"
        )
    finally:
        conn.execute(f"DELETE FROM temp.{stage}")
    return int(cur.lastrowid or 0) - len(rows)


def _relink(conn: sqlite3.Connection, writes: Sequence[Write]) -> None:
    """Supersede links of live winners: only the rows whose links changed are touched."""
    stale: list[tuple[str]] = []
    links: list[tuple[str, str]] = []
    for w in writes:
        record, prev = w.record, w.previous
        if prev is not None:
            deleted, _, _, _, links_json, _ = _EDITED(prev)
            if not deleted and not record.deleted and listed(links_json) == record.supersedes:
                continue
            stale.append((record.id,))
        if not record.deleted:
            links.extend((old, record.id) for old in record.supersedes)
    if stale:
        conn.executemany("DELETE FROM supersedes WHERE new_id = ?", stale)
    if links:
        conn.executemany("INSERT OR IGNORE INTO supersedes (old_id, new_id) VALUES (?, ?)", links)


def _remove(conn: sqlite3.Connection, rows: Sequence[sqlite3.Row], replaced_at: int) -> None:
    _insert_history(
        conn,
        [archived_values(row, replaced_at) for row in rows],
        [(row["content"], row["keywords"]) for row in rows],
    )
    ids = [(str(row["id"]),) for row in rows]
    conn.executemany("DELETE FROM supersedes WHERE new_id = ?", ids)
    conn.executemany("DELETE FROM redaction_marks WHERE id = ?", ids)
    conn.executemany("DELETE FROM memories WHERE id = ?", ids)
    derived.memories_changed(
        conn,
        after=None,
        inserted=[],
        replaced=[],
        deleted=[(Row(row), int(row["rowid"])) for row in rows],
    )


def load_rows(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, sqlite3.Row]:
    """The ``memories`` rows of ``ids`` (those that exist), in one query."""
    sql = f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN (SELECT value FROM json_each(?))"
    return {str(row["id"]): row for row in read_rows(conn, sql, (json.dumps(sorted(set(ids))),))}


def _keep(conn: sqlite3.Connection, keeps: Sequence[Keep], *, skip_winner: bool) -> None:
    """Add ``keeps`` to ``history`` (see the module docstring)."""
    ids = sorted({k.record.id for k in keeps})
    current = load_rows(conn, ids)
    seen = {
        (str(r[0]), str(r[1]))
        for r in conn.execute(
            "SELECT id, record_json FROM history WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
    }
    values, texts = [], []
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
        texts.append((k.record.content, " ".join(k.record.keywords)))
    _insert_history(conn, values, texts)
