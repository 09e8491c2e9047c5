"""Hub metadata in PostgreSQL (``--db postgresql://...``), for several stateless replicas.

Nothing that matters lives in one process: every replica reads and writes the
same rows, so compare-and-swap, quotas, nonces, rate limits, the per-team
change cursor and the team's generation hold across replicas.  Blobs live in
the blob store given beside it (an S3-compatible bucket, typically).

- A write, a chunk row's too, is a transaction holding the advisory lock of each
  team it writes (:meth:`~sealmem.hub.storage.dialect.Dialect.lock`): a quota
  check and the usage it guards are one decision, a chunk cannot vanish between
  a manifest's "all chunks held" check and its commit, and the shared statements'
  compare-and-swaps hold even without the lock.
- Nonces are rows with a unique key: a replay sent to another replica inside
  the window is refused, and a restart forgets nothing.
- Rate-limit buckets are rows updated in one statement each.
- Wake-ups go through LISTEN/NOTIFY (:class:`~sealmem.hub.storage.feed.PgFeed`).

Opening a :class:`PgStorage` connects once directly (a wrong DSN fails at once,
with a clear message), brings the schema up to date
(:func:`~sealmem.hub.storage.schema.upgrade_pg`), then opens a
``psycopg_pool.ConnectionPool`` of autocommit connections; transactions are
explicit.  Engine errors become :class:`StorageError` here (one line, never the
password).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .backends import shown_url
from .blobs import BlobStore
from .dialect import POSTGRES
from .feed import Feed, PgFeed
from .nonces import PURGE_SLACK_MS, REMEMBER, SEEN
from .schema import upgrade_pg
from .sql import Storage
from .values import Quota, StorageError, storage_failure

__all__ = ["BUCKET_IDLE_MS", "PgConn", "PgStorage", "brief"]

_NONCE_PURGE_MS = 60_000
#: a rate-limit bucket untouched this long has refilled (every hub rate refills its
#: burst within minutes): its row is deleted, which is the same as a full bucket
BUCKET_IDLE_MS = 60 * 60 * 1000


class PgConn:
    """A psycopg connection as the shared statements use it: ``?`` placeholders
    (named ones pass as they are), ``executemany`` on the connection."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, args: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        return self._conn.execute(_percent(sql), args)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._conn.cursor() as cur:
            cur.executemany(_percent(sql), rows)


@functools.lru_cache(maxsize=512)  # the statements are a fixed set, but for their IN lists
def _percent(text: str) -> str:
    return text.replace("?", "%s")


class PgStorage(Storage):
    """See the module docstring.  Any number of instances (replicas) per database."""

    dialect = POSTGRES

    def __init__(self, dsn: str, blobs: BlobStore, quota: Quota | None = None) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:  # pragma: no cover - the hub-scale extra is not installed
            raise StorageError(
                "the PostgreSQL backend needs psycopg: pip install 'sealmem[hub-scale]'"
            ) from None
        self._psycopg = psycopg
        self.where = shown_url(dsn)
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                upgrade_pg(conn)
        except psycopg.Error as exc:
            raise StorageError(f"cannot use the hub database {self.where}: {brief(exc)}") from None
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=16,
            kwargs={"autocommit": True},
            open=False,
            name="sealmem-hub",
        )
        try:
            self._pool.open(wait=True, timeout=30)
        except Exception as exc:
            self._pool.close()
            raise StorageError(f"cannot open connections to {self.where}: {exc}") from None
        super().__init__(blobs, quota)
        self._writing = threading.local()  # .conn: this thread's open transaction
        self._feed = PgFeed(dsn)
        self._next_purge = 0
        self._next_bucket_purge = 0

    @contextlib.contextmanager
    def _tx(self, *teams: str, grouped: bool = False) -> Iterator[PgConn]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                wrapped = PgConn(conn)
                POSTGRES.lock(wrapped, teams)
                outer, self._writing.conn = getattr(self._writing, "conn", None), wrapped
                try:
                    yield wrapped
                finally:
                    self._writing.conn = outer
        except self._psycopg.Error as exc:
            raise storage_failure(f"hub database write failed: {brief(exc)}", exc) from exc

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """On a pooled connection (its own snapshot); inside a write, on the writing
        thread, through the write's own (its work, and no second connection)."""
        try:
            writing: PgConn | None = getattr(self._writing, "conn", None)
            if writing is not None:
                return list(writing.execute(sql, args).fetchall())
            with self._pool.connection() as conn:
                return list(conn.execute(_percent(sql), args).fetchall())
        except self._psycopg.Error as exc:
            raise storage_failure(f"hub database read failed: {brief(exc)}", exc) from exc

    def close(self) -> None:
        self._pool.close()
        super().close()

    def feed(self) -> Feed:
        return self._feed

    # -- state shared by replicas ----------------------------------------------------

    def remember_nonce(self, kid: str, nonce: str, expires_ms: int, now_ms: int) -> bool:
        with self._tx() as conn:
            if now_ms >= self._next_purge:
                # rows expired a while ago only: a request on another replica (or thread)
                # may have read an earlier clock and still be inside its window
                conn.execute("DELETE FROM nonces WHERE expires_ms <= ?", (now_ms - PURGE_SLACK_MS,))
                self._next_purge = now_ms + _NONCE_PURGE_MS
            return bool(conn.execute(REMEMBER, (kid, nonce, expires_ms, now_ms)).rowcount)

    def nonce_seen(self, kid: str, nonce: str, now_ms: int) -> bool:
        return bool(self._read(SEEN, (kid, nonce, now_ms)))

    def take_token(self, key: str, rate_per_s: float, burst: int, now_ms: int) -> float:
        args = {"k": key, "burst": float(burst), "now": now_ms, "rate": rate_per_s / 1000.0}
        refill = "LEAST(%(burst)s, b.tokens + GREATEST(0, %(now)s - b.at_ms) * %(rate)s)"
        with self._tx() as conn:
            if now_ms >= self._next_bucket_purge:
                conn.execute("DELETE FROM rate_buckets WHERE at_ms < ?", (now_ms - BUCKET_IDLE_MS,))
                self._next_bucket_purge = now_ms + _NONCE_PURGE_MS
            spent = conn.execute(
                "INSERT INTO rate_buckets AS b (key, tokens, at_ms) "
                "VALUES (%(k)s, %(burst)s - 1, %(now)s) ON CONFLICT (key) DO UPDATE SET "
                f"tokens = {refill} - 1, at_ms = GREATEST(b.at_ms, %(now)s) "
                f"WHERE {refill} >= 1 RETURNING tokens",
                args,
            ).fetchone()
            if spent is not None:
                return 0.0
            tokens, at_ms = conn.execute(
                "SELECT tokens, at_ms FROM rate_buckets WHERE key = ?", (key,)
            ).fetchone()
        have = min(float(burst), float(tokens) + max(0, now_ms - int(at_ms)) * rate_per_s / 1000)
        return max((1.0 - have) / rate_per_s, 0.001)


def brief(exc: BaseException) -> str:
    """A database error in one line, without connection parameters."""
    sqlstate = getattr(exc, "sqlstate", None)
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return f"{line} (SQLSTATE {sqlstate})" if sqlstate else line
