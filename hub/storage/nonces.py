"""The SQLite hub's nonce cache: a database file of its own beside ``hub.db``.

Every signed request records its (kid, nonce) until it has left the replay
window (:class:`sealmem.hub.auth.ReplayGuard`).  In ``hub.db`` that insert
waited for SQLite's single writer lock, which a push holds across its durable
commit: every request, a GET too, queued behind the fsync of a push.  In a file
of its own (``hub-nonces.db`` for ``hub.db``: WAL, ``synchronous=NORMAL``, a
write lock of its own) it waits only for other nonce inserts, which do not
fsync when they commit.  ``NORMAL`` may forget the newest nonces on a power
loss (never corrupts the file); a process restart forgets none.  The WAL's
checkpoint (which does fsync) runs on a thread of its own every
:data:`CHECKPOINT_EVERY` inserts, and so does the purge of expired nonces (once a
minute, :data:`PURGE_CHUNK` rows a transaction, so an insert waits for one chunk at
most), never in the request that crossed the mark: on an embedded hub a request's
insert may run on the event loop.

The directory's ``hub.lock`` covers this file too.  Its schema is in
:mod:`.schema` (:func:`~sealmem.hub.storage.schema.set_up_nonces`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from pathlib import Path

from .dbfile import SQLiteDb
from .schema import set_up_nonces
from .values import StorageError

__all__ = ["CHECKPOINT_EVERY", "PURGE_CHUNK", "PURGE_SLACK_MS", "REMEMBER", "SEEN", "NonceFile"]

log = logging.getLogger("sealmem.hub")

#: inserts between two checkpoints of the WAL (an insert adds 2-3 pages to it)
CHECKPOINT_EVERY = 256
_PURGE_EVERY_MS = 60_000
#: the purge spares rows expired this recently: a request that read the clock before
#: the reading that crossed the mark may record its nonce after it (other threads, other
#: processes), and to it such a row is still inside its window
PURGE_SLACK_MS = 60_000
#: expired nonces deleted per transaction by the purge
PURGE_CHUNK = 512
_PURGE = (
    "DELETE FROM nonces WHERE (kid, nonce) IN "
    "(SELECT kid, nonce FROM nonces WHERE expires_ms <= ? LIMIT ?)"
)
#: record (kid, nonce, expires_ms) unless recorded and not expired at ``now`` (the 4th
#: parameter): a row changed is a nonce not seen inside its window (PostgreSQL too)
REMEMBER = (
    "INSERT INTO nonces (kid, nonce, expires_ms) VALUES (?, ?, ?) "
    "ON CONFLICT (kid, nonce) DO UPDATE SET expires_ms = excluded.expires_ms "
    "WHERE nonces.expires_ms <= ?"
)

#: (kid, nonce) recorded and not expired at the 3rd parameter (PostgreSQL too)
SEEN = "SELECT 1 FROM nonces WHERE kid = ? AND nonce = ? AND expires_ms > ?"


class NonceFile:
    """(kid, nonce) pairs until they expire, in their own SQLite file."""

    def __init__(self, path: Path) -> None:
        self._db = SQLiteDb(path, None, synchronous="NORMAL", autocheckpoint=False)
        try:
            self._db.set_up(set_up_nonces)
        except BaseException:
            self._db.close()
            raise
        self._next_purge = 0
        self._purge_before: int | None = None
        self._inserts = 0
        self._wake = threading.Event()
        self._closing = False
        self._checkpointer = threading.Thread(
            target=self._checkpoints, name="sealmem-hub-nonce-checkpoints", daemon=True
        )
        self._checkpointer.start()

    def _checkpoints(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closing:
                return
            before, self._purge_before = self._purge_before, None
            try:
                while before is not None and not self._closing:  # close: give way
                    with self._db.tx() as conn:
                        gone = conn.execute(_PURGE, (before, PURGE_CHUNK)).rowcount
                    before = before if gone == PURGE_CHUNK else None
                self._db.read("PRAGMA wal_checkpoint(PASSIVE)")
            except StorageError as exc:  # the next mark tries again
                log.warning("nonce file purge or checkpoint failed: %s", exc)

    def remember(self, kid: str, nonce: str, expires_ms: int, now_ms: int) -> bool:
        """See :meth:`sealmem.hub.storage.Storage.remember_nonce`."""
        if now_ms >= self._next_purge:
            self._next_purge = now_ms + _PURGE_EVERY_MS
            self._purge_before = now_ms - PURGE_SLACK_MS
            self._wake.set()
        with self._db.statement() as conn:  # one statement: its own transaction
            stored = conn.execute(REMEMBER, (kid, nonce, expires_ms, now_ms)).rowcount > 0
        self._inserts += 1
        if self._inserts % CHECKPOINT_EVERY == 0:
            self._wake.set()
        return stored

    def seen(self, kid: str, nonce: str, now_ms: int) -> bool:
        """See :meth:`sealmem.hub.storage.Storage.nonce_seen`."""
        return bool(self._db.read(SEEN, (kid, nonce, now_ms)))

    def adopt(self, rows: Iterable[tuple[str, str, int]]) -> None:
        """Take over nonces recorded elsewhere (an older layout's table), keeping the
        later expiry of a pair recorded in both; durable when this returns (the old
        table may be dropped next)."""
        with self._db.tx() as conn:
            conn.executemany(
                "INSERT INTO nonces (kid, nonce, expires_ms) VALUES (?, ?, ?) "
                "ON CONFLICT (kid, nonce) DO UPDATE SET "
                "expires_ms = MAX(nonces.expires_ms, excluded.expires_ms)",
                rows,
            )
        self._db.read("PRAGMA wal_checkpoint(FULL)")  # synchronous=NORMAL: sync it now

    def close(self) -> None:
        self._closing = True
        self._wake.set()
        self._checkpointer.join(timeout=10)
        self._db.close()
