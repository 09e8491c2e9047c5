"""An SQLite database file for one hub process: its lock, connections and transactions.

``hub.lock`` (or ``NAME.db.lock``) is held from open to close, so two hubs never
serve one database (a second file of the same directory, such as the nonce
file, is opened without a lock of its own: the directory's lock covers it).
Each thread has its own connection (WAL, ``synchronous=FULL`` unless the file
says otherwise: the nonce file's ``NORMAL`` may forget the newest nonces on a
power loss, never corrupt anything).  Writes take a lock of this file's own
and ``BEGIN IMMEDIATE``, so two files never wait for each other; every
``sqlite3`` error becomes a :class:`~sealmem.hub.storage.values.StorageError` naming
the file.  With ``grouped=True``, writes arriving together share one durable
commit (:mod:`.group`): they run on one write connection, and
a thread inside a write reads through it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import filelock

from .group import GroupCommit
from .values import StorageError, storage_failure

__all__ = ["SQLiteDb"]


class _Held:
    """One thread's connection, held by that thread's ``threading.local`` alone: when the
    thread ends, this goes and closes it."""

    __slots__ = ("__weakref__", "conn")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # closed already, or the interpreter is ending
            self.conn.close()


class SQLiteDb:
    def __init__(
        self,
        path: Path,
        lock_path: Path | None,
        *,
        synchronous: str = "FULL",
        autocheckpoint: bool = True,
        grouped: bool = False,
    ) -> None:
        self.path = path
        self._synchronous = synchronous
        self._autocheckpoint = autocheckpoint  # False: the owner runs wal_checkpoint itself
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StorageError(f"cannot use the hub data directory {path.parent}: {exc}") from exc
        self._lock: filelock.FileLock | None = None
        if lock_path is not None:
            # Held until close(), which may run on another thread: not thread-local.
            self._lock = filelock.FileLock(
                lock_path, mode=0o600, blocking=False, thread_local=False
            )
            try:
                self._lock.acquire()
            except filelock.Timeout:
                raise StorageError(
                    f"another hub is serving {path} ({lock_path.name} is locked); stop it first"
                ) from None
            except OSError as exc:
                raise StorageError(f"cannot lock {lock_path}: {exc}") from exc
        self._local = threading.local()
        self._write = threading.Lock()
        #: the threads' read connections, each closed when its thread ends (worker threads
        #: come and go) or at close()
        self._conns: weakref.WeakSet[_Held] = weakref.WeakSet()
        self._conns_lock = threading.Lock()
        self._group = GroupCommit(self._open) if grouped else None

    def set_up(self, schema: Callable[[sqlite3.Connection], None]) -> None:
        """Run ``schema`` (create or upgrade) under the write lock."""
        try:
            with self._write:
                schema(self.conn())
        except sqlite3.Error as exc:
            raise storage_failure(f"cannot set up {self.path}: {exc}", exc) from exc

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            if not self._autocheckpoint:
                conn.execute("PRAGMA wal_autocheckpoint=0")
        except sqlite3.Error as exc:
            raise storage_failure(f"cannot open {self.path}: {exc}", exc) from exc
        return conn

    def conn(self) -> sqlite3.Connection:
        if self._group is not None:
            writing = self._group.writing()
            if writing is not None:  # inside a write: see the group's uncommitted work
                return writing
        held: _Held | None = getattr(self._local, "held", None)
        if held is None:
            held = _Held(self._open())
            self._local.held = held
            with self._conns_lock:
                self._conns.add(held)
        return held.conn

    @property
    def group(self) -> GroupCommit | None:
        """The group commit of a ``grouped`` file (its counters), else None."""
        return self._group

    def tx(self, *, solo: bool = False) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A write transaction (not reentrant: never open one inside another).  On a
        ``grouped`` file it may share its commit with writes arriving together, unless
        ``solo``; either way it returns once durable."""
        if self._group is not None:
            return self._group.tx(solo=solo)
        return self._alone()

    @contextlib.contextmanager
    def _alone(self) -> Iterator[sqlite3.Connection]:
        conn = self.conn()
        with self._write:
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise storage_failure(f"hub database write failed: {exc}", exc) from exc

    @contextlib.contextmanager
    def statement(self) -> Iterator[sqlite3.Connection]:
        """The write lock for one writing statement, run in autocommit mode (its own
        transaction: no BEGIN/COMMIT round trips).  Not on a ``grouped`` file."""
        conn = self.conn()
        with self._write:
            try:
                yield conn
            except sqlite3.Error as exc:
                raise storage_failure(f"hub database write failed: {exc}", exc) from exc

    def read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self.conn().execute(sql, args))
        except sqlite3.Error as exc:
            raise storage_failure(f"hub database read failed: {exc}", exc) from exc

    def close(self) -> None:
        if self._group is not None:
            self._group.close()
        with self._conns_lock:
            for held in list(self._conns):
                held.conn.close()
            self._conns.clear()
        self._local = threading.local()
        if self._lock is not None:
            self._lock.release()
            self._lock = None
