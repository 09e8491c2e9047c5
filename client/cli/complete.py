"""Shell completion of values from the store: kinds, memory ids, projects.

typer calls these while the shell completes a word (``sealmem completion``,
``--install-completion``); each answers what starts with the typed text.  A completion
never creates or changes a store and never fails: without a store, or with one it
cannot read, kinds are the built-in ones and there are no ids or projects.  Ids are
offered as the CLI prints them (the last 12 hex digits, :func:`..store.ids.short_id`)
or whole when the typed text starts a full id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .. import MemoryStore

__all__ = ["ID_SCAN", "kinds", "memory_ids", "projects"]

ID_SCAN = 200
"""Ids offered come from this many most recent memories."""


def _with_store(read: Callable[[MemoryStore], list[str]]) -> list[str]:
    from .. import paths

    db = paths.store_path(paths.home())
    if not db.is_file():
        return []
    try:
        from ..recall.api import MemoryStore

        with MemoryStore.open(db, readonly=True) as store:
            return read(store)
    except Exception:  # a completion never fails, whatever the store holds
        return []


def _stats(key: str) -> Callable[[MemoryStore], list[str]]:
    def read(store: MemoryStore) -> list[str]:
        counts: dict[str, Any] = store.stats()[key]
        return sorted(counts)

    return read


def kinds(incomplete: str) -> list[str]:
    """The built-in kinds, then the others this store uses."""
    from ..store.inputs import BUILTIN_KINDS

    found = list(dict.fromkeys([*BUILTIN_KINDS, *_with_store(_stats("by_kind"))]))
    return [k for k in found if k.startswith(incomplete.lower())]


def projects(incomplete: str) -> list[str]:
    """The projects this store holds memories for."""
    return [p for p in _with_store(_stats("by_project")) if p.startswith(incomplete)]


def memory_ids(incomplete: str) -> list[str]:
    """Ids of the most recent memories (every project) that the typed text starts."""
    from ..store.ids import short_id

    typed = incomplete.strip().lower()

    def read(store: MemoryStore) -> list[str]:
        recent = store.recent(limit=ID_SCAN, all_projects=True)
        out = []
        for memory in recent:
            short = short_id(memory.id)
            if short.startswith(typed):
                out.append(short)
            elif memory.id.startswith(typed):
                out.append(memory.id)
        return out

    return list(dict.fromkeys(_with_store(read)))
