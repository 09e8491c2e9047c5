"""The embedded storage: SQLite (WAL) for metadata over a blob store (a directory).

Layout of the data directory (``--data DIR``, or ``--db sqlite:///DIR/hub.db``)::

    hub.db                                   metadata, objects, change feed
    hub-nonces.db                            the nonce cache (:mod:`.nonces`)
    blobs/{team}/{project}/{writer}/{id}     one encrypted chunk per file (default)
    hub.lock                                 held while a hub serves this database

One process serves a database (``hub.lock``), so rate-limit buckets live in
its memory (:mod:`.buckets`); everything else that must survive a restart is in
``hub.db`` and ``hub-nonces.db``.  A team's write lock is SQLite's own: every
write is a ``BEGIN IMMEDIATE`` transaction (:mod:`.dbfile`: connections,
durability).  The statements are the shared ones (:mod:`.sql`, :mod:`.writes`),
the schema and its upgraders in :mod:`.schema`.  ``group_commit`` (the default,
the fast path): the writes that arrive together share one durable commit
(:mod:`.group`); False (the plain path): each write commits alone.  The storage
contract runs over both.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import Quota
from .blobs import BlobDir, BlobStore
from .buckets import TokenBuckets
from .dbfile import SQLiteDb
from .dialect import SQLITE
from .nonces import NonceFile
from .schema import set_up
from .sql import Storage

__all__ = ["DB_FILE", "LOCK_FILE", "SQLiteStorage"]

DB_FILE = "hub.db"
LOCK_FILE = "hub.lock"


class SQLiteStorage(Storage):
    """See the module docstring.  One instance per database and process."""

    dialect = SQLITE

    def __init__(
        self,
        data_dir: Path,
        blobs: BlobStore | None = None,
        *,
        quota: Quota | None = None,
        db_name: str = DB_FILE,
        group_commit: bool = True,
    ) -> None:
        data_dir = Path(data_dir)
        lock_name = LOCK_FILE if db_name == DB_FILE else f"{db_name}.lock"
        # takes hub.lock; with group_commit, manifests and chunk rows share commits
        self._sql = SQLiteDb(data_dir / db_name, data_dir / lock_name, grouped=group_commit)
        try:
            self._nonces = NonceFile(data_dir / f"{Path(db_name).stem}-nonces.db")
        except BaseException:
            self._sql.close()
            raise
        try:
            super().__init__(blobs if blobs is not None else BlobDir(data_dir / "blobs"), quota)
            self._sql.set_up(lambda conn: set_up(conn, self._nonces.adopt))
        except BaseException:
            self._nonces.close()
            self._sql.close()
            raise
        self._buckets = TokenBuckets()

    def close(self) -> None:
        self._nonces.close()
        self._sql.close()
        super().close()

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        return self._sql.read(sql, args)

    def _tx(
        self, *teams: str, grouped: bool = False
    ) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return self._sql.tx(solo=not grouped)  # the database's write lock covers every team

    @property
    def commits(self) -> tuple[int, int]:
        """(transactions committed, writes run) on ``hub.db`` since it was opened, by the
        group commit ((0, 0) without it)."""
        group = self._sql.group
        return (group.commits, group.writes) if group is not None else (0, 0)

    def remember_nonce(self, kid: str, nonce: str, expires_ms: int, now_ms: int) -> bool:
        return self._nonces.remember(kid, nonce, expires_ms, now_ms)

    def nonce_seen(self, kid: str, nonce: str, now_ms: int) -> bool:
        return self._nonces.seen(kid, nonce, now_ms)

    def take_token(self, key: str, rate_per_s: float, burst: int, now_ms: int) -> float:
        return self._buckets.take(key, rate_per_s, burst, now_ms)
