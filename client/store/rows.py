"""Rows of the local store <-> values: the column layout of ``memories`` and ``history``.

This is the one place that knows the column layout of the two tables
(:mod:`sealmem.client.store.schema`): the values a row holds for a version
(:func:`memory_row`, :func:`history_values`) and the versions a row holds
(:func:`record_from_row`, :func:`memory_from_row`).  Rows are written by
:mod:`sealmem.client.store.writer` alone; the rule of what a tombstone erases is
:func:`covers`.  The store's hybrid logical clock lives in ``meta`` (:func:`next_hlc`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import re
import sqlite3
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from ...protocol.hlc import ZERO, Hlc, receive, tick
from ...protocol.record import Record
from .connection import get_meta, set_meta
from .memory import Memory, Provenance
from .terms import stored_grams, stored_stems

__all__ = [
    "HISTORY_COLUMNS",
    "MEMORY_COLUMNS",
    "MEMORY_COLUMN_NAMES",
    "MEMORY_VALUE_COLUMNS",
    "RECORD_COLUMNS",
    "archived_values",
    "at",
    "covers",
    "history_values",
    "listed",
    "load_row",
    "memory_from_history_row",
    "memory_from_row",
    "memory_row",
    "next_hlc",
    "norm_hash",
    "normalize",
    "observe_hlc",
    "provenance_of",
    "read_hlc",
    "record_from_row",
    "record_from_values",
    "record_json",
    "save_hlc",
]

MEMORY_COLUMN_NAMES = (
    "rowid", "id", "project", "kind", "content", "keywords", "keywords_json", "importance",
    "local_importance", "author", "editor", "created_at", "hlc_wall", "hlc_counter",
    "supersedes_json", "deleted", "delete_reason", "origin", "visibility", "seen_count",
    "updated_at", "norm_hash", "transport", "signer", "signer_name", "verified", "received_at",
    "snapshot_seq", "stems", "source", "grams",
)  # fmt: skip
"""The ``memories`` columns the store reads a whole row with (:data:`MEMORY_COLUMNS`), in
order: :func:`at` gives their positions."""
MEMORY_COLUMNS = ", ".join(MEMORY_COLUMN_NAMES)

RECORD_COLUMNS = (
    "id, project, kind, content, keywords_json, importance, author, editor, created_at, "
    "hlc_wall, hlc_counter, supersedes_json, deleted, delete_reason, origin, visibility, source"
)
"""The ``memories`` columns :func:`record_from_row` reads (a push reads every own row:
not the stems, the search text or the provenance)."""
_PROVENANCE = ("transport", "signer", "signer_name", "verified", "received_at", "snapshot_seq")


def at(*names: str) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """The values of ``names`` (two or more) in a row read with :data:`MEMORY_COLUMNS`, by
    position: a ``sqlite3.Row`` looked up by name compares the name with each column
    before it."""
    return operator.itemgetter(*map(MEMORY_COLUMN_NAMES.index, names))


@functools.lru_cache(maxsize=256)
def _getter(keys: tuple[str, ...], names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The values of ``names`` in a row whose columns are ``keys``, by position."""
    return operator.itemgetter(*map(keys.index, names))


HISTORY_COLUMNS = (
    "id", "record_json", "local_importance", "seen_count", "updated_at", "transport",
    "signer", "signer_name", "verified", "received_at", "snapshot_seq", "replaced_at",
)  # fmt: skip

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


def listed(text: str) -> tuple[str, ...]:
    """``json.loads(text)`` as a tuple; split, when ``text`` has the shape
    :func:`_keywords_json` joins (no string in it holds a character JSON escapes)."""
    if text == "[]":
        return ()
    inner = text[2:-2]
    if (
        len(text) > 3
        and text.startswith('["')
        and text.endswith('"]')
        and _ESCAPED.search(inner.replace('", "', "")) is None
    ):
        return tuple(inner.split('", "'))
    return tuple(json.loads(text))


_RECORD = tuple(RECORD_COLUMNS.split(", "))


def record_from_row(row: sqlite3.Row) -> Record:
    return record_from_values(_getter(tuple(row.keys()), _RECORD)(row))


def record_from_values(row: Sequence[Any]) -> Record:
    """:func:`record_from_row` of a row read with :data:`RECORD_COLUMNS` first, by
    position (a push reads every own row: no lookup by name, no JSON parse of ``[]``)."""
    return Record(
        row[0],
        row[1],
        row[2],
        row[3],
        listed(row[4]),
        float(row[5]),
        row[6],
        row[7],
        int(row[8]),
        Hlc(int(row[9]), int(row[10])),
        listed(row[11]),
        bool(row[12]),
        row[13],
        row[14],
        row[15],
        row[16],
    )


def provenance_of(row: sqlite3.Row) -> Provenance:
    """The provenance of the version held by a ``memories`` or ``history`` row."""
    transport, signer, name, verified, received_at, seq = _getter(tuple(row.keys()), _PROVENANCE)(
        row
    )
    return Provenance(transport, signer, name, bool(verified), received_at, seq)


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


def covers(tombstone_editor: str, tombstone_transport: str, version_editor: str) -> bool:
    """Whether a tombstone erases a version's text: one written here (``forget``) erases
    every version, a teammate's only the versions that teammate wrote."""
    return tombstone_transport == "local" or version_editor == tombstone_editor


MEMORY_VALUE_COLUMNS = MEMORY_COLUMN_NAMES[1:]
"""The ``memories`` columns :func:`memory_row` gives values for, in its order: those of
:data:`MEMORY_COLUMNS` but ``rowid``."""


def memory_row(
    record: Record,
    *,
    provenance: Provenance,
    local_importance: float,
    seen_count: int,
    updated_at: int,
    same_text: sqlite3.Row | None = None,
) -> tuple[Any, ...]:
    """The ``memories`` columns (all but ``rowid``) of a row holding ``record``, in
    :data:`MEMORY_VALUE_COLUMNS` order (what a batch writes: no dict per row).

    ``same_text``: a row that holds the same content and keywords (the row it replaces,
    mostly), whose stems, grams and de-duplication hash are then taken as they are."""
    keywords, supersedes = record.keywords, record.supersedes
    spaced = " ".join(keywords)
    if same_text is not None and not record.deleted:
        digest, stems, grams = same_text["norm_hash"], same_text["stems"], same_text["grams"]
    else:
        digest = None if record.deleted else norm_hash(record.content)
        stems = stored_stems(record.content, spaced)
        grams = stored_grams(record.content, spaced)
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
        digest,
        provenance.transport,
        provenance.signer,
        provenance.signer_name,
        int(provenance.verified),
        provenance.received_at,
        provenance.snapshot_seq,
        stems,
        record.source,
        grams,
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
    """The ``history`` columns of one replaced version, in :data:`HISTORY_COLUMNS` order."""
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


_ARCHIVED = at("local_importance", "seen_count", "updated_at", *_PROVENANCE)


def archived_values(
    row: sqlite3.Row, replaced_at: int, record: Record | None = None
) -> tuple[Any, ...]:
    """The ``history`` columns that archive a ``memories`` row read with
    :data:`MEMORY_COLUMNS` (``record``: the version it holds, when already read from it)."""
    importance, seen, updated, transport, signer, name, verified, received, seq = _ARCHIVED(row)
    return history_values(
        record_from_row(row) if record is None else record,
        provenance=Provenance(transport, signer, name, bool(verified), received, seq),
        local_importance=float(importance),
        seen_count=int(seen),
        updated_at=int(updated),
        replaced_at=replaced_at,
    )


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
    save_hlc(conn, stamp)
    return stamp


def observe_hlc(conn: sqlite3.Connection, remote: Hlc, now_ms: int) -> Hlc:
    """Advance the store's clock past a version received from elsewhere."""
    stamp = receive(read_hlc(conn), remote, now_ms)
    save_hlc(conn, stamp)
    return stamp


def save_hlc(conn: sqlite3.Connection, stamp: Hlc) -> None:
    """Store ``stamp`` as the store's clock (one a merge computed, e.g. ``MergeResult.clock``)."""
    set_meta(conn, "hlc", f"{stamp.wall}:{stamp.counter}")
