"""Long-poll wake-ups across replicas: PostgreSQL LISTEN/NOTIFY behind a :class:`Feed`.

Every change a replica records sends ``NOTIFY sealmem_changes, '<team>'`` in
the writing transaction (delivered on commit, to every listening session).
Each hub process runs one listener thread on its own connection; for each
notification it sets, on the event loop, the team's event, so a reader
long-polling on replica B wakes when a push lands on replica A.  After a lost
connection the listener reconnects and wakes every waiter (a notification may
have been missed while it was away); a reader woken for nothing looks at the
feed, finds it unchanged and waits again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from .feed import LocalFeed
from .pg_schema import NOTIFY_CHANNEL

__all__ = ["PgFeed"]

log = logging.getLogger("sealmem.hub")


class PgFeed(LocalFeed):
    """A :class:`LocalFeed` that other replicas' commits also fire."""

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
