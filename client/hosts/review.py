"""Review of what a hook captured (:mod:`.capture`) or an agent stored (MCP ``remember``,
held private by :mod:`sealmem.client.store.agentwrites`): the rules the CLI and the
viewer share.

The queue is every live private memory whose text a hook or an agent wrote (its
record's ``source``, :attr:`~sealmem.protocol.record.Record.written_by`).  Accepting
makes a team version, still marked as the agent's or the hook's (the next sync shares
it); discarding forgets one that was never shared.  Each chosen memory is checked
before any is changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...protocol.errors import InputError
from ..store.ids import short_id

if TYPE_CHECKING:
    from ..recall.api import MemoryStore
    from ..store.memory import Memory

__all__ = ["DISCARD_REASON", "REVIEWED", "accept", "choose", "discard", "waiting"]

DISCARD_REASON = "discarded capture"

REVIEWED = ("agent", "hook")
"""Who wrote the texts the queue holds: an agent tool, a hook capture."""


def waiting(store: MemoryStore, project: str | None = None) -> list[Memory]:
    """Live private memories a hook captured or an agent stored, oldest first (a record
    stating no ``source`` is read from its origin: a capture of before the field)."""
    from ..store.rows import MEMORY_COLUMNS, memory_from_row

    where = "visibility = 'private' AND deleted = 0 AND (source IS NULL OR source IN (?, ?))"
    params: list[Any] = list(REVIEWED)
    if project is not None:
        where += " AND project = ?"
        params.append(project)
    rows = store.connection.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY created_at, id", params
    ).fetchall()
    found = map(memory_from_row, rows)
    return [memory for memory in found if memory.source in REVIEWED]


def choose(store: MemoryStore, ids: Sequence[str], verb: str) -> list[Memory]:
    """The memories ``ids`` name, each checked to be a hook's or an agent's, without repeats."""
    if not ids:
        raise InputError(
            f"name the memories to {verb} (sealmem captured {verb} ID...), or give --all; "
            "'sealmem captured' lists them"
        )
    chosen: list[Memory] = []
    for given in ids:
        memory = store.get(given)
        if memory.source not in REVIEWED:
            raise InputError(
                f"memory {memory.id} was written by source {memory.source!r}, not captured "
                "by a hook or stored by an agent; nothing was changed: 'sealmem captured' "
                "lists the ones waiting for review"
            )
        if memory.id not in {m.id for m in chosen}:
            chosen.append(memory)
    return chosen


def accept(store: MemoryStore, chosen: Sequence[Memory]) -> list[tuple[Memory, bool]]:
    """Share each of ``chosen`` with the team; (the shared version, was it already shared)."""
    for memory in chosen:
        if memory.record.deleted:
            raise InputError(
                f"memory {memory.id} was discarded ({memory.record.delete_reason}); "
                "nothing was changed: there is no text left to share"
            )
    return [(store.share(m.id), m.record.visibility == "team") for m in chosen]


def discard(store: MemoryStore, chosen: Sequence[Memory]) -> list[Memory]:
    """Forget each of ``chosen`` that was never shared; the ones forgotten now."""
    for memory in chosen:
        if memory.record.visibility == "team":
            raise InputError(
                f"memory {memory.id} was accepted and is shared with the team; nothing "
                f"was changed: forget it with 'sealmem forget {short_id(memory.id)} --reason WHY'"
            )
    done = []
    for memory in chosen:
        if not memory.record.deleted:
            store.forget(memory.id, reason=DISCARD_REASON)
            done.append(memory)
    return done
