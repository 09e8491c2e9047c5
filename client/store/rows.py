"""Rows of the local store <-> values: reading memories, writing winning versions.

This is the one place that knows the column layout of ``memories`` and
``history`` (:mod:`sealmem.client.store.schema`).  The local API and the sync engine
both write through :func:`write_version`, so that a replaced version always
lands in ``history`` and the supersede links always follow the winner.

A forgotten memory keeps no text that its forgetter may erase.  While a tombstone
is the winner of an id, the ``history`` of that id holds no version with content
that the tombstone *covers* (:func:`purge_history`; :func:`insert_history`
refuses to add one): a tombstone written here (``sealmem forget``) covers every
version, one pulled from a teammate covers the versions that teammate wrote.
A teammate's tombstone therefore never erases what others wrote from this
store (DESIGN §3: nothing is lost locally), so a hostile or stolen key cannot
destroy the team's text, and a revocation that drops its tombstone brings the
best remaining version back.  Earlier tombstones stay, so a dropped tombstone
can give way to another one.  What the deleted rows leave in
free pages, full-text segments and the WAL is wiped by
:func:`sealmem.client.store.scrub.settle`.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from typing import Any

from ...protocol.hlc import ZERO, Hlc, receive, tick
from ...protocol.record import Record
from ..recall.terms import stored_stems
from .connection import get_meta, set_meta
from .memory import Memory, Provenance

__all__ = [
    "HISTORY_COLUMNS",
    "HISTORY_INSERT",
    "MEMORY_COLUMNS",
    "MEMORY_VALUE_COLUMNS",
    "RECORD_COLUMNS",
    "archive",
    "archived_values",
    "covers",
    "history_values",
    "insert_history",
    "load_row",
    "memory_from_history_row",
    "memory_from_row",
    "memory_row",
    "memory_values",
    "next_hlc",
    "norm_hash",
    "normalize",
    "observe_hlc",
    "provenance_of",
    "purge_history",
    "read_hlc",
    "record_from_row",
    "record_from_values",
    "record_json",
    "save_hlc",
    "write_version",
]

MEMORY_COLUMNS = (
    "rowid, id, project, kind, content, keywords, keywords_json, importance, "
    "local_importance, author, editor, created_at, hlc_wall, hlc_counter, supersedes_json, "
    "deleted, delete_reason, origin, visibility, seen_count, updated_at, norm_hash, "
    "transport, signer, signer_name, verified, received_at, snapshot_seq"
)

RECORD_COLUMNS = (
    "id, project, kind, content, keywords_json, importance, author, editor, created_at, "
    "hlc_wall, hlc_counter, supersedes_json, deleted, delete_reason, origin, visibility"
)
"""The ``memories`` columns :func:`record_from_row` reads (a push reads every own row:
not the stems, the search text or the provenance)."""

HISTORY_COLUMNS = (
    "id", "record_json", "local_importance", "seen_count", "updated_at", "transport",
    "signer", "signer_name", "verified", "received_at", "snapshot_seq", "replaced_at",
)  # fmt: skip
HISTORY_INSERT = (
    f"INSERT INTO history ({', '.join(HISTORY_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(HISTORY_COLUMNS))})"
)


# json.dumps(..., ensure_ascii=False) builds an encoder per call; these are built once
# (same output: the defaults of json.dumps otherwise).
_TEXT = json.JSONEncoder(ensure_ascii=False).encode
_SORTED_TEXT = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
_ASCII_TEXT = json.JSONEncoder().encode  # json.dumps


# What json.dumps(..., ensure_ascii=False) escapes in a string (json.encoder's ESCAPE)
_ESCAPED = re.compile(r'[\x00-\x1f\\"]')


def _keywords_json(keywords: tuple[str, ...], spaced: str) -> str:
    """``_TEXT(list(keywords))``: built by a join when no keyword holds a character JSON
    escapes (``spaced``, the keywords joined by spaces, is searched once)."""
    if not keywords:
        return "[]"
    if _ESCAPED.search(spaced) is None:
        return '["' + '", "'.join(keywords) + '"]'
    return _TEXT(list(keywords))


def normalize(content: str) -> str:
    """The form two memories share when they say the same thing: NFKC, casefold, spaces."""
    return " ".join(unicodedata.normalize("NFKC", content).casefold().split())


def norm_hash(content: str) -> str | None:
    """Hash of :func:`normalize` (None for empty content, i.e. tombstones)."""
    text = normalize(content)
    if not text:
        return None
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def record_from_row(row: sqlite3.Row) -> Record:
    return Record(
        id=row["id"],
        project=row["project"],
        kind=row["kind"],
        content=row["content"],
        keywords=tuple(json.loads(row["keywords_json"])),
        importance=float(row["importance"]),
        author=row["author"],
        editor=row["editor"],
        created_at=int(row["created_at"]),
        hlc=Hlc(int(row["hlc_wall"]), int(row["hlc_counter"])),
        supersedes=tuple(json.loads(row["supersedes_json"])),
        deleted=bool(row["deleted"]),
        delete_reason=row["delete_reason"],
        origin=row["origin"],
        visibility=row["visibility"],
    )


def record_from_values(row: Sequence[Any]) -> Record:
    """:func:`record_from_row` of a row read with :data:`RECORD_COLUMNS` first, by
    position (a push reads every own row: no lookup by name, no JSON parse of ``[]``)."""
    keywords, supersedes = row[4], row[11]
    return Record(
        row[0],
        row[1],
        row[2],
        row[3],
        () if keywords == "[]" else tuple(json.loads(keywords)),
        float(row[5]),
        row[6],
        row[7],
        int(row[8]),
        Hlc(int(row[9]), int(row[10])),
        () if supersedes == "[]" else tuple(json.loads(supersedes)),
        bool(row[12]),
        row[13],
        row[14],
        row[15],
    )


def provenance_of(row: sqlite3.Row) -> Provenance:
    """The provenance of the version held by a ``memories`` or ``history`` row."""
    return Provenance(
        transport=row["transport"],
        signer=row["signer"],
        signer_name=row["signer_name"],
        verified=bool(row["verified"]),
        received_at=row["received_at"],
        snapshot_seq=row["snapshot_seq"],
    )


def memory_from_row(row: sqlite3.Row) -> Memory:
    """The :class:`Memory` held by a ``memories`` row."""
    return Memory(
        record=record_from_row(row),
        seen_count=int(row["seen_count"]),
        updated_at=int(row["updated_at"]),
        provenance=provenance_of(row),
    )


def memory_from_history_row(row: sqlite3.Row) -> Memory:
    """The :class:`Memory` held by a ``history`` row."""
    return Memory(
        record=Record.from_wire(json.loads(row["record_json"])),
        seen_count=int(row["seen_count"]),
        updated_at=int(row["updated_at"]),
        provenance=provenance_of(row),
    )


def load_row(conn: sqlite3.Connection, memory_id: str) -> sqlite3.Row | None:
    cur = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ?", (memory_id,))
    row: sqlite3.Row | None = cur.fetchone()
    return row


def record_json(record: Record) -> str:
    """The text form of a record in ``history`` (its wire form, keys sorted)."""
    return _SORTED_TEXT(record.to_wire())


def purge_history(conn: sqlite3.Connection, memory_id: str, editor: str | None = None) -> int:
    """Delete the versions of ``memory_id`` in ``history`` that have content (only those
    ``editor`` wrote, when given); return how many.

    Earlier tombstones (no content, no keywords) stay.  The ``history_fts`` rows go
    with them (trigger); :func:`sealmem.client.store.scrub.settle` wipes the rest.
    """
    sql = (
        "DELETE FROM history WHERE id = ? "
        "AND coalesce(json_extract(record_json, '$.deleted'), 0) = 0"
    )
    if editor is None:
        cur = conn.execute(sql, (memory_id,))
    else:
        cur = conn.execute(
            sql + " AND json_extract(record_json, '$.editor') = ?", (memory_id, editor)
        )
    return max(cur.rowcount, 0)


def covers(tombstone_editor: str, tombstone_transport: str, version_editor: str) -> bool:
    """Whether a tombstone erases a version's text: one written here (``forget``) erases
    every version, a teammate's only the versions that teammate wrote."""
    return tombstone_transport == "local" or version_editor == tombstone_editor


def _forgotten_by(conn: sqlite3.Connection, memory_id: str) -> tuple[str, str] | None:
    """(editor, transport) of the winning tombstone of ``memory_id``, or None."""
    row = conn.execute(
        "SELECT editor, transport FROM memories WHERE id = ? AND deleted = 1", (memory_id,)
    ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


def insert_history(
    conn: sqlite3.Connection,
    record: Record,
    *,
    provenance: Provenance,
    local_importance: float,
    seen_count: int,
    updated_at: int,
    replaced_at: int,
) -> bool:
    """Add one replaced version to ``history``; False (nothing added) for a version with
    content that the memory's winning tombstone covers (:func:`covers`): a forgotten
    text never comes back through a late version or an old export."""
    by = None if record.deleted else _forgotten_by(conn, record.id)
    if by is not None and covers(*by, record.editor):
        return False
    conn.execute(
        HISTORY_INSERT,
        history_values(
            record,
            provenance=provenance,
            local_importance=local_importance,
            seen_count=seen_count,
            updated_at=updated_at,
            replaced_at=replaced_at,
        ),
    )
    return True


def archive(conn: sqlite3.Connection, row: sqlite3.Row, replaced_at: int) -> None:
    """Copy the version held by a ``memories`` row into ``history``."""
    insert_history(
        conn,
        record_from_row(row),
        provenance=provenance_of(row),
        local_importance=float(row["local_importance"]),
        seen_count=int(row["seen_count"]),
        updated_at=int(row["updated_at"]),
        replaced_at=replaced_at,
    )


MEMORY_VALUE_COLUMNS = (
    "id", "project", "kind", "content", "keywords", "keywords_json", "importance",
    "local_importance", "author", "editor", "created_at", "hlc_wall", "hlc_counter",
    "supersedes_json", "deleted", "delete_reason", "origin", "visibility", "seen_count",
    "updated_at", "norm_hash", "stems", "transport", "signer", "signer_name", "received_at",
    "snapshot_seq", "verified",
)  # fmt: skip
"""The ``memories`` columns :func:`memory_row` gives values for, in its order."""


def memory_row(
    record: Record,
    *,
    provenance: Provenance,
    local_importance: float,
    seen_count: int,
    updated_at: int,
) -> tuple[Any, ...]:
    """The ``memories`` columns (all but ``rowid``) of a row holding ``record``, in
    :data:`MEMORY_VALUE_COLUMNS` order (what a batch writes: no dict per row)."""
    keywords, supersedes = record.keywords, record.supersedes
    spaced = " ".join(keywords)
    return (
        record.id,
        record.project,
        record.kind,
        record.content,
        spaced,
        _keywords_json(keywords, spaced),
        record.importance,
        local_importance,
        record.author,
        record.editor,
        record.created_at,
        record.hlc.wall,
        record.hlc.counter,
        _ASCII_TEXT(list(supersedes)) if supersedes else "[]",
        int(record.deleted),
        record.delete_reason,
        record.origin,
        record.visibility,
        seen_count,
        updated_at,
        None if record.deleted else norm_hash(record.content),
        stored_stems(record.content, spaced),
        provenance.transport,
        provenance.signer,
        provenance.signer_name,
        provenance.received_at,
        provenance.snapshot_seq,
        int(provenance.verified),
    )


def memory_values(
    record: Record,
    *,
    provenance: Provenance,
    local_importance: float,
    seen_count: int,
    updated_at: int,
) -> dict[str, Any]:
    """:func:`memory_row` by column name."""
    return dict(
        zip(
            MEMORY_VALUE_COLUMNS,
            memory_row(
                record,
                provenance=provenance,
                local_importance=local_importance,
                seen_count=seen_count,
                updated_at=updated_at,
            ),
            strict=True,
        )
    )


def history_values(
    record: Record,
    *,
    provenance: Provenance,
    local_importance: float,
    seen_count: int,
    updated_at: int,
    replaced_at: int,
) -> tuple[Any, ...]:
    """The ``history`` columns of one replaced version, in :data:`HISTORY_INSERT` order."""
    return (
        record.id,
        record_json(record),
        local_importance,
        seen_count,
        updated_at,
        provenance.transport,
        provenance.signer,
        provenance.signer_name,
        int(provenance.verified),
        provenance.received_at,
        provenance.snapshot_seq,
        replaced_at,
    )


def archived_values(row: sqlite3.Row, replaced_at: int) -> tuple[Any, ...]:
    """The ``history`` columns that :func:`archive` writes for a ``memories`` row."""
    return history_values(
        record_from_row(row),
        provenance=provenance_of(row),
        local_importance=float(row["local_importance"]),
        seen_count=int(row["seen_count"]),
        updated_at=int(row["updated_at"]),
        replaced_at=replaced_at,
    )


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
    """Make ``record`` the winner for its id: archive any previous version, relink.

    ``bucket_key`` (:func:`~sealmem.protocol.snapshot.bucket_key` of the id) is stored
    with a new row; None leaves it to the next push, and a row already there keeps its
    own (the id, hence the key, is the same).

    A tombstone is not archived over the text it covers (:func:`covers`): the
    previous version's text is dropped if covered, and the covered history of the
    id purged (:func:`purge_history`).  Returns how many versions with
    content left the store that way (0 for any other write); when it is not 0, run
    :func:`sealmem.client.store.scrub.settle` after the transaction commits.

    The caller decides that ``record`` wins (LWW, importance floor); this only
    writes.  Run it inside a transaction.
    """
    previous = load_row(conn, record.id)
    values = memory_values(
        record,
        provenance=provenance,
        local_importance=local_importance,
        seen_count=seen_count,
        updated_at=updated_at,
    )
    purged = 0
    # whose text a tombstone erases here: every version (forget), or its writer's own
    only = None if provenance.transport == "local" else record.editor
    if previous is None:
        if bucket_key is not None:
            values["bucket_key"] = bucket_key
        names = ", ".join(values)
        marks = ", ".join(f":{name}" for name in values)
        conn.execute(f"INSERT INTO memories ({names}) VALUES ({marks})", values)
    else:
        covered = record.deleted and not previous["deleted"]
        if covered and only is not None and previous["editor"] != only:
            covered = False  # a teammate's tombstone keeps what others wrote
        if not covered:
            archive(conn, previous, updated_at)
        else:
            purged = 1
        if record.deleted:
            purged += purge_history(conn, record.id, only)
        sets = ", ".join(f"{name} = :{name}" for name in values if name != "id")
        conn.execute(f"UPDATE memories SET {sets} WHERE id = :id", values)
    if record.deleted and previous is None:
        purged = purge_history(conn, record.id, only)  # a memory dropped earlier
    conn.execute("DELETE FROM supersedes WHERE new_id = ?", (record.id,))
    if not record.deleted:
        conn.executemany(
            "INSERT OR IGNORE INTO supersedes (old_id, new_id) VALUES (?, ?)",
            [(old, record.id) for old in record.supersedes],
        )
    return purged


def read_hlc(conn: sqlite3.Connection) -> Hlc:
    """The last HLC this store issued or observed."""
    value = get_meta(conn, "hlc")
    if value is None:
        return ZERO
    wall, _, counter = value.partition(":")
    return Hlc(int(wall), int(counter))


def next_hlc(conn: sqlite3.Connection, now_ms: int) -> Hlc:
    """Tick the store's clock for a local write (inside the write's transaction)."""
    stamp = tick(read_hlc(conn), now_ms)
    set_meta(conn, "hlc", f"{stamp.wall}:{stamp.counter}")
    return stamp


def observe_hlc(conn: sqlite3.Connection, remote: Hlc, now_ms: int) -> Hlc:
    """Advance the store's clock past a version received from elsewhere."""
    stamp = receive(read_hlc(conn), remote, now_ms)
    set_meta(conn, "hlc", f"{stamp.wall}:{stamp.counter}")
    return stamp


def save_hlc(conn: sqlite3.Connection, stamp: Hlc) -> None:
    """Store ``stamp`` as the store's clock (one a merge computed, e.g. ``MergeResult.clock``)."""
    set_meta(conn, "hlc", f"{stamp.wall}:{stamp.counter}")
