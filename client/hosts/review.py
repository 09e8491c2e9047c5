"""Review of captured memories (:mod:`.capture`): the rules the CLI and the viewer share.

Accepting makes a team version (the next sync shares it); discarding forgets a
capture that was never shared.  Each chosen memory is checked before any is changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...protocol.errors import InputError
from ..store.ids import short_id
from .capture import ORIGIN, is_captured

if TYPE_CHECKING:
    from ..recall.api import MemoryStore
    from ..store.memory import Memory

__all__ = ["DISCARD_REASON", "accept", "choose", "discard", "waiting"]

DISCARD_REASON = "discarded capture"


def waiting(store: MemoryStore, project: str | None = None) -> list[Memory]:
    """Live private memories the transcript capture stored, oldest first."""
    from ..store.rows import MEMORY_COLUMNS, memory_from_row

    where = "(origin = ? OR origin LIKE ?) AND visibility = 'private' AND deleted = 0"
    params: list[Any] = [ORIGIN, ORIGIN + ":%"]  # with or without the host's session
    if project is not None:
        where += " AND project = ?"
        params.append(project)
    rows = store.connection.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY created_at, id", params
    ).fetchall()
    return [memory_from_row(row) for row in rows]


def choose(store: MemoryStore, ids: Sequence[str], verb: str) -> list[Memory]:
    """The captured memories ``ids`` name, each checked to be a capture, without repeats."""
    if not ids:
        raise InputError(
            f"name the memories to {verb} (sealmem captured {verb} ID...), or give --all; "
            "'sealmem captured' lists them"
        )
    chosen: list[Memory] = []
    for given in ids:
        memory = store.get(given)
        if not is_captured(memory.record.origin):
            raise InputError(
                f"memory {memory.id} was not captured from a transcript (origin "
                f"{memory.record.origin!r}); nothing was changed: "
                "'sealmem captured' lists the captured ones"
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
