"""``completion/complete`` and ``logging/setLevel`` for the MCP server (both transports).

MCP completes the arguments of prompts and resource templates only (a tool's
arguments are not completable).  Those that take a value from the store:

- ``project`` (the ``startup_context`` prompt, ``sealmem://startup-context/{project}``):
  the projects the store holds memories for;
- ``id`` (``sealmem://memory/{id}``): ids of the most recent memories that reach
  agents (a muted writer's never), the last :data:`ID_SCAN` of them.

No prompt or template takes a kind, so kinds are not completed (``status`` lists
them; the tools' ``kinds`` argument is a tool argument, which MCP does not complete).

A value matches when it starts with what was typed (ids: case-insensitively);
an answer holds at most :data:`MAX_VALUES` (the protocol's cap), ``has_more``
says when there were more.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from mcp_types import Completion, CompletionArgument

from .views import agent_viewer

if TYPE_CHECKING:
    from .. import MemoryStore

__all__ = ["ID_SCAN", "MAX_VALUES", "Completer", "matching"]

MAX_VALUES = 100
ID_SCAN = 1000


def matching(candidates: Iterable[str], typed: str, *, fold: bool = False) -> Completion:
    """The candidates that start with ``typed``, in order, at most :data:`MAX_VALUES`."""
    prefix = typed.lower() if fold else typed
    found = list(
        dict.fromkeys(c for c in candidates if (c.lower() if fold else c).startswith(prefix))
    )
    return Completion(values=found[:MAX_VALUES], total=len(found), has_more=len(found) > MAX_VALUES)


class Completer:
    """Completion values from the store ``store()`` opens (the tools' store)."""

    def __init__(self, store: Callable[[], MemoryStore]) -> None:
        self._store = store

    def complete(self, argument: CompletionArgument) -> Completion | None:
        if argument.name == "project":
            return matching(self._store().stats()["by_project"], argument.value)
        if argument.name == "id":
            return matching(self._ids(), argument.value.strip(), fold=True)
        return None

    def _ids(self) -> list[str]:
        store = self._store()
        view = agent_viewer(store.reader())
        recent = store.recent(limit=ID_SCAN, all_projects=True)
        return [m.id for m in recent if view(m) is not None]
