"""Wake long-polling readers of a team's change feed when something is stored."""

from __future__ import annotations

import asyncio

__all__ = ["Feed"]


class Feed:
    """One event per team, replaced each time it fires (a broadcast to current waiters).

    Callers take :meth:`event` *before* they look at storage, then wait on it: a
    change committed after the look still wakes them.  Used on the event loop only.
    """

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def event(self, team: str) -> asyncio.Event:
        return self._events.setdefault(team, asyncio.Event())

    def notify(self, team: str) -> None:
        event = self._events.pop(team, None)
        if event is not None:
            event.set()

    @staticmethod
    async def wait(event: asyncio.Event, timeout_s: float) -> bool:
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            return False
        return True
