"""Wake long-polling readers of a team's change feed when something is stored.

The seam: a :class:`Feed` hands out one :class:`asyncio.Event` per team to
waiters and sets it when the team changes.  :class:`LocalFeed` does so within
one process (enough for the embedded SQLite hub, which one process serves
alone); a backend shared by several replicas returns its own feed from
:meth:`sealmem.hub.storage.Storage.feed` (PostgreSQL: LISTEN/NOTIFY), so that
a push through one replica wakes readers waiting on every other.

What every feed MUST guarantee: a waiter that took :meth:`Feed.event` *before*
it looked at storage is woken by any change committed after that look (at
worst once too often, never not at all before its timeout); and it holds no
state for a team nobody waits on (queried team ids do not pile up).  Methods
are called on the event loop.
"""

from __future__ import annotations

import abc
import asyncio
import weakref

__all__ = ["Feed", "LocalFeed"]


class Feed(abc.ABC):
    """Per-team wake-ups; see the module docstring."""

    @abc.abstractmethod
    def event(self, team: str) -> asyncio.Event:
        """The event the next change of ``team`` sets (take it before reading storage)."""

    @abc.abstractmethod
    def notify(self, team: str) -> None:
        """``team`` changed (called after the commit, by the replica that wrote)."""

    async def start(self) -> None:  # noqa: B027 - optional: a shared feed starts listening
        """Begin receiving other replicas' notifications (app start-up)."""

    async def close(self) -> None:  # noqa: B027 - optional
        """Stop listening (app shutdown)."""

    @staticmethod
    async def wait(event: asyncio.Event, timeout_s: float) -> bool:
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            return False
        return True


class LocalFeed(Feed):
    """One event per team, replaced each time it fires (a broadcast to current waiters).

    Events are held weakly: once no waiter holds a team's event, it is gone."""

    def __init__(self) -> None:
        self._events: weakref.WeakValueDictionary[str, asyncio.Event] = (
            weakref.WeakValueDictionary()
        )

    def event(self, team: str) -> asyncio.Event:
        found = self._events.get(team)
        if found is None:
            found = asyncio.Event()
            self._events[team] = found
        return found

    def notify(self, team: str) -> None:
        event = self._events.pop(team, None)
        if event is not None:
            event.set()

    def __len__(self) -> int:
        return len(self._events)
