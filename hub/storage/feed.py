"""Wake long-polling readers of a team's change feed when something is stored.

A :class:`Feed` hands out one :class:`asyncio.Event` per team to waiters and
sets it when the team changes, within one process (enough for the embedded
SQLite hub, which one process serves alone); a backend shared by several
replicas returns its own feed from :meth:`sealmem.hub.storage.Storage.feed`
(PostgreSQL: LISTEN/NOTIFY), so that a push through one replica wakes readers
waiting on every other.

What every feed MUST guarantee: a waiter that took :meth:`Feed.event` *before*
it looked at storage is woken by any change committed after that look (at
worst once too often, never not at all before its timeout); and it holds no
state for a team nobody waits on (queried team ids do not pile up).  Methods
are called on the event loop.

:class:`PgFeed`: every change a PostgreSQL replica records sends ``NOTIFY
sealmem_changes, '<team>'`` in the writing transaction (delivered on commit, to
every listening session).  Each hub process runs one listener thread on its own
connection; for each notification it sets, on the event loop, the team's event,
so a reader long-polling on replica B wakes when a push lands on replica A.
After a lost connection the listener reconnects and wakes every waiter (a
notification may have been missed while it was away); a reader woken for
nothing looks at the feed, finds it unchanged and waits again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from typing import Any

__all__ = ["NOTIFY_CHANNEL", "Feed", "PgFeed"]

log = logging.getLogger("sealmem.hub")

#: PostgreSQL's LISTEN/NOTIFY channel; the payload is the team id whose feed moved
NOTIFY_CHANNEL = "sealmem_changes"


class Feed:
    """Per-team wake-ups within one process: one event per team, replaced each time it
    fires (a broadcast to current waiters).  Events are held weakly: once no waiter
    holds a team's event, it is gone."""

    def __init__(self) -> None:
        self._events: weakref.WeakValueDictionary[str, asyncio.Event] = (
            weakref.WeakValueDictionary()
        )

    def event(self, team: str) -> asyncio.Event:
        """The event the next change of ``team`` sets (take it before reading storage)."""
        found = self._events.get(team)
        if found is None:
            found = asyncio.Event()
            self._events[team] = found
        return found

    def notify(self, team: str) -> None:
        """``team`` changed (called after the commit, by the replica that wrote)."""
        event = self._events.pop(team, None)
        if event is not None:
            event.set()

    def __len__(self) -> int:
        return len(self._events)

    async def start(self) -> None:
        """Begin receiving other replicas' notifications (app start-up)."""

    async def close(self) -> None:
        """Stop listening (app shutdown)."""

    @staticmethod
    async def wait(event: asyncio.Event, timeout_s: float) -> bool:
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            return False
        return True


class PgFeed(Feed):
    """A :class:`Feed` that other replicas' commits also fire."""

    def __init__(self, dsn: str) -> None:
        super().__init__()
        self._dsn = dsn
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.listening = threading.Event()

    async def start(self) -> None:
        if self._thread is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._stop.clear()
        self._thread = threading.Thread(target=self._listen, name="sealmem-feed", daemon=True)
        self._thread.start()

    async def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            await asyncio.to_thread(thread.join, 5)

    def _wake(self, team: str | None) -> None:
        if team is not None:
            self.notify(team)
            return
        for name in list(self._events.keys()):
            self.notify(name)

    def _deliver(self, team: str | None) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake, team)

    def _listen(self) -> None:
        import psycopg

        delay = 0.1
        first = True
        while not self._stop.is_set():
            try:
                conn: Any
                with psycopg.connect(self._dsn, autocommit=True, connect_timeout=10) as conn:
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    self.listening.set()
                    if not first:
                        self._deliver(None)
                    first, delay = False, 0.1
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._deliver(note.payload)
            except psycopg.Error as exc:
                self.listening.clear()
                if self._stop.is_set():
                    return
                log.warning("change listener lost the database (%s); reconnecting",
                            type(exc).__name__)  # fmt: skip
                self._stop.wait(delay)
                delay = min(delay * 2, 5.0)
