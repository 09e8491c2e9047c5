"""Local writes: a new memory, a reinforced duplicate, a shared one, a tombstone.

Only a new memory says who wrote its text (its record's ``source``: a person, an
agent, a hook, an import); every later version of it (a repeat, a share, a new
importance, a tombstone) keeps that ``source``.

Each function runs inside the caller's transaction, ticks the store's HLC for every
new version, and writes through :mod:`sealmem.client.store.writer` (so the replaced
version lands in history).  Arguments arrive validated (:mod:`.inputs`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from dataclasses import replace

from ...protocol.errors import InputError, NotFoundError, ProtocolError
from ...protocol.record import MAX_KEYWORDS, MAX_SUPERSEDES, Record, Source, new_memory_id
from . import ids as memory_ids
from . import redacting
from .memory import Memory, Provenance
from .redact import redact_texts
from .rows import MEMORY_COLUMNS, memory_from_row, next_hlc, norm_hash
from .writer import Batch, Local, write, write_version

__all__ = [
    "create",
    "find_twin",
    "kinds_like",
    "reinforce",
    "resolve_links",
    "set_importance",
    "share",
    "tombstone",
]


def resolve_links(conn: sqlite3.Connection, ids: Sequence[str]) -> list[str]:
    """The full ids ``ids`` name (full ids or fragments, :mod:`.ids`), without repeats;
    :class:`NotFoundError` for the first one the store does not hold."""
    out: list[str] = []
    for given in ids:
        try:
            full = memory_ids.resolve(conn, given)
        except NotFoundError:
            raise NotFoundError(
                f"supersedes names {given}, which is not in this store; nothing was stored: "
                "check the id with 'sealmem show'"
            ) from None
        if full not in out:
            out.append(full)
    return out


def find_twin(
    conn: sqlite3.Connection, project: str, content: str, author: str
) -> sqlite3.Row | None:
    """A live memory of ``project`` with the same normalized content (own ones first)."""
    row: sqlite3.Row | None = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE project = ? AND norm_hash = ? "
        "AND deleted = 0 ORDER BY (author = ?) DESC, updated_at DESC LIMIT 1",
        (project, norm_hash(content), author),
    ).fetchone()
    return row


def kinds_like(conn: sqlite3.Connection, kind: str) -> list[str]:
    """``[kind]`` if a memory of this store has it, else every kind the store holds."""
    if conn.execute("SELECT 1 FROM memories WHERE kind = ? LIMIT 1", (kind,)).fetchone():
        return [kind]
    return [str(r[0]) for r in conn.execute("SELECT DISTINCT kind FROM memories")]


def _write(
    conn: sqlite3.Connection, record: Record, local_importance: float, seen_count: int, now: int
) -> Memory:
    try:
        record.validate()
    except ProtocolError as exc:
        raise InputError(f"refused to store the memory: {exc}") from exc
    write_version(
        conn,
        record,
        provenance=Provenance.local(),
        local_importance=local_importance,
        seen_count=seen_count,
        updated_at=now,
    )
    return Memory(record, seen_count, now, Provenance.local())


def create(
    conn: sqlite3.Connection,
    *,
    author: str,
    now: int,
    project: str,
    kind: str,
    content: str,
    keywords: Sequence[str],
    importance: float,
    supersedes: Sequence[str],
    private: bool,
    origin: str,
    source: Source,
) -> Memory:
    """Store a new memory with a fresh UUIDv7 id (its text redacted by the caller),
    written by ``source`` (a person, an agent, a hook, an import)."""
    record = Record(
        id=new_memory_id(now, os.urandom(10)),
        project=project,
        kind=kind,
        content=content,
        keywords=tuple(keywords),
        importance=importance,
        author=author,
        editor=author,
        created_at=now,
        hlc=next_hlc(conn, now),
        supersedes=tuple(supersedes),
        origin=origin,
        visibility="private" if private else "team",
        source=source,
    )
    memory = _write(conn, record, importance, 1, now)
    _mark_redacted_here(conn, memory)
    return memory


def _mark_redacted_here(conn: sqlite3.Connection, memory: Memory) -> None:
    """Note that this store's rules wrote ``memory``'s text just now, so the redaction
    before its first push (:func:`sealmem.client.sync.redaction.redact_pending`) does not
    run them again."""
    redacting.check_rules(conn)
    record = memory.record
    redacting.mark_redacted(conn, [(record.id, *record.order_key)])


def reinforce(
    conn: sqlite3.Connection,
    twin: sqlite3.Row,
    *,
    author: str,
    now: int,
    keywords: Sequence[str],
    importance: float,
    kind: str | None,
    supersedes: Sequence[str],
) -> tuple[Memory, dict[str, int]]:
    """Merge a repeated memory into ``twin``: seen_count + 1, keywords and links united,
    importance max; a ``kind`` given takes over (None keeps the twin's).  Only when the
    record changes is a new version written.  Returns the memory and the secrets found
    once the new keywords are read with the old ones, by type."""
    before = memory_from_row(twin)
    current = before.record
    merged_kw = list(current.keywords)
    seen = {w.casefold() for w in merged_kw}
    for word in keywords:
        if word.casefold() not in seen and len(merged_kw) < MAX_KEYWORDS:
            merged_kw.append(word)
            seen.add(word.casefold())
    found: dict[str, int] = {}
    if len(merged_kw) > len(current.keywords):  # a secret split across old and new is caught
        together = redact_texts("", merged_kw)
        merged_kw, found = list(together.keywords), together.found_keywords
    links = list(current.supersedes)
    links += [i for i in supersedes if i not in links and i != current.id]
    changed = current.evolve(
        keywords=tuple(merged_kw),
        importance=max(current.importance, importance),
        kind=kind or current.kind,
        supersedes=tuple(links[:MAX_SUPERSEDES]),
    )
    seen_count = int(twin["seen_count"]) + 1
    if changed == current:
        write(conn, Batch(local=[Local(current.id, seen_count=seen_count, updated_at=now)]))
        return replace(before, seen_count=seen_count, updated_at=now), found
    record = changed.evolve(editor=author, hlc=next_hlc(conn, now))
    floor = max(float(twin["local_importance"]), record.importance)
    return _write(conn, record, floor, seen_count, now), found


def share(conn: sqlite3.Connection, row: sqlite3.Row, *, author: str, now: int) -> Memory:
    """A team version of the private memory in ``row``: see :meth:`.api.LocalStore.share`."""
    current = memory_from_row(row).record
    if current.deleted:
        raise InputError(
            f"memory {current.id} is forgotten ({current.delete_reason}): there is no text "
            "left to share"
        )
    if current.visibility == "team":
        return memory_from_row(row)
    cleaned = redact_texts(current.content, current.keywords)
    record = current.evolve(
        content=cleaned.content,
        keywords=cleaned.keywords,
        visibility="team",
        editor=author,
        hlc=next_hlc(conn, now),
    )
    memory = _write(conn, record, float(row["local_importance"]), int(row["seen_count"]), now)
    _mark_redacted_here(conn, memory)
    return memory


def tombstone(
    conn: sqlite3.Connection, row: sqlite3.Row, *, author: str, now: int, reason: str
) -> Memory:
    """Replace the memory in ``row`` by a tombstone: no content or keywords, reason kept.

    A memory a teammate forgot can be forgotten again here while this store still
    holds text of it (a teammate's tombstone erases only that teammate's own text):
    the new tombstone erases every version here, and on teammates' stores the
    versions this member wrote.
    """
    current = memory_from_row(row).record
    if current.deleted and (
        row["transport"] == "local"
        or conn.execute(
            "SELECT 1 FROM history WHERE id = ? "
            "AND coalesce(json_extract(record_json, '$.deleted'), 0) = 0 LIMIT 1",
            (current.id,),
        ).fetchone()
        is None
    ):
        raise InputError(f"memory {current.id} is already forgotten ({current.delete_reason})")
    record = current.evolve(
        content="",
        keywords=(),
        supersedes=(),
        deleted=True,
        delete_reason=reason,
        editor=author,
        hlc=next_hlc(conn, now),
    )
    return _write(conn, record, float(row["local_importance"]), int(row["seen_count"]), now)


def set_importance(
    conn: sqlite3.Connection, row: sqlite3.Row, *, author: str, now: int, importance: float
) -> Memory:
    """A new version of the memory in ``row`` with ``importance``; the local floor follows
    the person's choice (they may lower it: a teammate's version never does)."""
    current = memory_from_row(row).record
    if current.deleted:
        raise InputError(f"memory {current.id} is forgotten: it has no importance to set")
    if current.importance == importance and float(row["local_importance"]) == importance:
        return memory_from_row(row)
    record = current.evolve(importance=importance, editor=author, hlc=next_hlc(conn, now))
    return _write(conn, record, importance, int(row["seen_count"]), now)
