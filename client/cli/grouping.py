"""Near-duplicates and staleness as the CLI shows them in ``recall`` and ``list``.

Results are grouped after ranking (:func:`..recall.dupes.group`): one entry per lesson,
led by its best-ranked version, every writer named.  ``recall`` asks the store for more
results than it shows (:func:`wider`) so that a group frees its slot for the next
memory; the recall is noted for staleness after the answer is printed
(:func:`note_recalled`), so the write never delays it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...protocol.errors import SealmemError
from ..recall.api import MAX_K
from ..recall.dupes import Group, group, shown, stands_alone
from ..store.ids import short_id

if TYPE_CHECKING:
    from .. import Memory, MemoryStore
    from ..store.memory import Hit

__all__ = [
    "STALE_NOTE",
    "due",
    "group_doc",
    "group_hits",
    "group_memories",
    "lines",
    "list_notes",
    "marks",
    "note_recalled",
    "wider",
    "writers",
]

STALE_NOTE = (
    "stale: no one confirmed it within the review period "
    "('sealmem review' to keep, correct or forget it)"
)


def wider(k: int) -> int:
    """How many results to ask for so that ``k`` groups can be shown (``k`` itself when it
    is out of range: the store's refusal says so)."""
    return k if not 1 <= k <= MAX_K else min(MAX_K, 2 * k)


def group_hits(hits: Sequence[Hit], k: int) -> list[Group[Hit]]:
    """The groups of near-duplicate ``hits`` (best first) that a recall of ``k`` shows."""
    found = group(
        hits,
        lambda h: h.memory.content,
        alone=lambda h: stands_alone(h.memory, bool(h.superseded_by)),
    )
    return shown(found, k, lambda h: h.related)


def group_memories(
    memories: Sequence[Memory], replaced: Mapping[str, Sequence[Memory]]
) -> list[Group[Memory]]:
    return group(
        memories, lambda m: m.content, alone=lambda m: stands_alone(m, bool(replaced.get(m.id)))
    )


def writers(members: Sequence[Memory], names: Mapping[str, str], me: str) -> list[str]:
    """Every writer of a group, each once, in rank order (verified names)."""
    seen: list[str] = []
    for m in members:
        name = m.authorship(names, me).writer_name
        if name not in seen:
            seen.append(name)
    return seen


def marks(hit: Hit) -> str:
    """A near-duplicate's marks, as its group's leader has them: related (it matches none
    of the query's words), stale; empty when neither."""
    found = [word for word, on in (("related", hit.related), ("stale", hit.stale)) if on]
    return f" ({', '.join(found)})" if found else ""


def lines(
    others: Sequence[Memory],
    names: Mapping[str, str],
    me: str,
    *,
    stale: bool = False,
    marked: Mapping[str, str] | None = None,
) -> list[str]:
    """Detail lines of a group's leader: its stale mark, then each near-duplicate with
    its marks (``marked``, by id: :func:`marks`)."""
    out = [STALE_NOTE] if stale else []
    for m in others:
        first = next((ln.strip() for ln in m.content.splitlines() if ln.strip()), "")
        first = first if len(first) <= 100 else first[:97] + "..."
        who = m.authorship(names, me).writer_name
        mark = (marked or {}).get(m.id, "")
        out.append(f"also written by {who}{mark}: {short_id(m.id)} {first}")
    return out


def list_notes(
    groups: Sequence[Group[Memory]], names: Mapping[str, str], me: str
) -> dict[str, str]:
    """``list``'s mark for each group leader with near-duplicates: who else wrote it."""
    notes = {}
    for g in groups:
        if g.others:
            also = ", ".join(
                f"{m.authorship(names, me).writer_name} {short_id(m.id)}" for m in g.others
            )
            notes[g.leader.id] = f"also written by {also}"
    return notes


def group_doc(
    doc: dict[str, Any], others: list[dict[str, Any]], all_writers: list[str]
) -> dict[str, Any]:
    """A leader's JSON with its group: ``duplicates`` (each as the leader is) and
    ``writers`` (every writer of the group, verified names)."""
    return {**doc, "duplicates": others, "writers": all_writers}


def note_recalled(ids: Sequence[str]) -> None:
    """Record that ``ids`` were recalled (a store opened for writing, after the answer);
    a store that cannot be written (a read-only file) keeps no note, and says nothing:
    the recall itself was answered."""
    if not ids:
        return
    from .memory import open_store

    try:
        with open_store() as store:
            store.note_recalled(ids)
    except (SealmemError, sqlite3.Error, OSError):
        return


def due(store: MemoryStore, groups: Sequence[Group[Hit]]) -> list[str]:
    """The ids shown whose recall is not yet noted today."""
    return store.recall_due([h.memory.id for g in groups for h in g.members])
