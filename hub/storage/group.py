"""Group commit: writes to one SQLite file that arrive together share one durable commit.

With ``synchronous=FULL`` a commit is an fsync of the WAL (a few ms of wall time
on a disk, ~0.2 ms of CPU), and the database's write lock is held across it, so
PUTs committed one by one queue behind each other's fsyncs.
:class:`GroupCommit` runs them in one transaction instead:

- every write runs on one write connection, under a mutex, inside its own
  ``SAVEPOINT``: a write that fails (a refusal, a constraint) is rolled back to
  its savepoint and leaves the work of the others in place;
- a write that is done while other threads wait for the mutex hands the open
  transaction on to them (up to :data:`MAX_WRITES` writes, or :data:`MAX_AGE_S`
  after it began); the last one commits.  Every write of the group returns (or
  raises) only once that commit is durable: an acknowledged write survives a
  crash, and a failed commit fails every write of its group (none was
  acknowledged);
- a *solo* write (one that changes what the others verify against: a roster, a
  keyring, the team's generation) first commits the open group, then runs and
  commits alone.

The writes of one group see each other's uncommitted work (one connection), and
so do the reads a writing thread makes meanwhile (:meth:`GroupCommit.writing`):
a write that read another's uncommitted work commits or fails with it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator

from .values import DiskFull, StorageError, no_space, storage_failure

__all__ = ["MAX_AGE_S", "MAX_WRITES", "GroupCommit"]

#: a group commits once it holds this many writes, even if more are waiting
MAX_WRITES = 64
#: ... or once its transaction is this old (a steady stream never delays the first)
MAX_AGE_S = 0.05


class _Batch:
    """One open transaction and the writes in it."""

    __slots__ = ("began", "broken", "done", "error", "full", "writes")

    def __init__(self) -> None:
        self.began = time.monotonic()
        self.done = threading.Event()
        self.error: StorageError | None = None
        self.writes = 0
        self.broken = False  # the transaction ended under a write: it cannot commit
        self.full = False  # ... because the disk is full


class GroupCommit:
    """The write side of one database file; see the module docstring."""

    def __init__(self, connect: Callable[[], sqlite3.Connection]) -> None:
        self._connect = connect
        self._conn: sqlite3.Connection | None = None
        self._mutex = threading.Lock()  # the write connection and the open batch
        self._guard = threading.Lock()  # the count below
        self._queued = 0  # threads waiting for the mutex
        self._batch: _Batch | None = None
        self._local = threading.local()
        #: transactions committed, writes run (the ratio is the mean group size)
        self.commits = 0
        self.writes = 0

    def writing(self) -> sqlite3.Connection | None:
        """The write connection if this thread is inside a write (its reads must see the
        group's uncommitted work), else None."""
        return self._conn if getattr(self._local, "writing", False) else None

    @contextlib.contextmanager
    def tx(self, *, solo: bool = False) -> Iterator[sqlite3.Connection]:
        """One write, in a savepoint of the open group (or, ``solo``, alone); returns
        once its transaction is durable, raises :class:`StorageError` if it is not."""
        conn, batch = self._enter(solo)
        self._local.writing = True
        try:
            with self._savepoint(conn, batch):
                yield conn
        finally:
            self._local.writing = False
            error = self._end(batch, solo)
        if error is not None:
            raise error

    @contextlib.contextmanager
    def _savepoint(self, conn: sqlite3.Connection, batch: _Batch) -> Iterator[None]:
        """One write in its own savepoint: rolled back alone if it raises."""
        try:
            conn.execute("SAVEPOINT write")
            try:
                yield
            except BaseException:
                self._undo(conn, batch)
                raise
            conn.execute("RELEASE write")
        except sqlite3.Error as exc:
            batch.broken = batch.broken or not conn.in_transaction
            batch.full = batch.full or no_space(exc)
            raise storage_failure(f"hub database write failed: {exc}", exc) from exc

    def _enter(self, solo: bool) -> tuple[sqlite3.Connection, _Batch]:
        with self._guard:
            self._queued += 1
        self._mutex.acquire()
        with self._guard:
            self._queued -= 1
        try:
            if self._conn is None:
                self._conn = self._connect()
            if solo and self._batch is not None:
                self._commit(self._batch)  # the group before goes first, on its own
            if self._batch is None:
                self._conn.execute("BEGIN IMMEDIATE")
                self._batch = _Batch()
            return self._conn, self._batch
        except BaseException as exc:
            if self._batch is not None:  # handed to us: it must still commit
                self._commit(self._batch)
            self._mutex.release()
            if isinstance(exc, sqlite3.Error):
                raise storage_failure(f"hub database write failed: {exc}", exc) from exc
            raise

    @staticmethod
    def _undo(conn: sqlite3.Connection, batch: _Batch) -> None:
        """Roll one write back to its savepoint; the others' work stays.  If the engine
        ended the whole transaction (SQLite does on a full disk, an I/O error, ...),
        the group cannot commit."""
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK TO write")
                conn.execute("RELEASE write")
            else:
                batch.broken = True
        except sqlite3.Error:
            batch.broken = True

    def _end(self, batch: _Batch, solo: bool) -> StorageError | None:
        """Hand the open group on to a waiting write, or commit it; then wait for the
        commit's outcome.  Called holding the mutex; releases it."""
        batch.writes += 1
        self.writes += 1
        with self._guard:
            waiting = self._queued
        hand_on = (
            waiting
            and not solo
            and not batch.broken
            and batch.writes < MAX_WRITES
            and time.monotonic() - batch.began < MAX_AGE_S
        )
        if not hand_on:
            self._commit(batch)
        self._mutex.release()
        batch.done.wait()
        return batch.error

    def _commit(self, batch: _Batch) -> None:
        """Commit (or, broken, roll back) the open group and tell its writes; holding the mutex."""
        conn = self._conn
        try:
            if conn is None or batch.broken or not conn.in_transaction:
                batch.error = (DiskFull if batch.full else StorageError)(
                    "hub database write failed: the transaction was rolled back under a write "
                    "of the same commit group; nothing of it was stored, retry"
                )
                if conn is not None and conn.in_transaction:
                    conn.execute("ROLLBACK")
            else:
                conn.execute("COMMIT")
                self.commits += 1
        except sqlite3.Error as exc:
            batch.error = storage_failure(f"hub database write failed: {exc}", exc)
            with contextlib.suppress(sqlite3.Error):
                if conn is not None and conn.in_transaction:
                    conn.execute("ROLLBACK")
        finally:
            self._batch = None
            batch.done.set()

    def close(self) -> None:
        with self._mutex:
            if self._batch is not None:  # handed on by writes that wait for its commit
                self._commit(self._batch)
            if self._conn is not None:
                self._conn.close()
                self._conn = None
