"""The hub's PostgreSQL connections: a pool, transactions under team locks, and
engine errors translated into :class:`StorageError` (one line, never the password).

Opening a :class:`Database` connects once directly (a wrong DSN fails at once,
with a clear message), brings the schema up to date
(:func:`sealmem.hub.pg_schema.upgrade`), then opens a
``psycopg_pool.ConnectionPool`` of autocommit connections; transactions are
explicit (:meth:`Database.tx`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from . import StorageError
from .pg_schema import upgrade
from .pg_write import lock_team

__all__ = ["Database", "brief", "redact"]


class Database:
    def __init__(self, dsn: str, *, pool_size: int = 16) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:  # pragma: no cover - the hub-scale extra is not installed
            raise StorageError(
                "the PostgreSQL backend needs psycopg: pip install 'sealmem[hub-scale]'"
            ) from None
        self._psycopg = psycopg
        self.where = redact(dsn)
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                upgrade(conn)
        except psycopg.Error as exc:
            raise StorageError(f"cannot use the hub database {self.where}: {brief(exc)}") from None
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            open=False,
            name="sealmem-hub",
        )
        try:
            self._pool.open(wait=True, timeout=30)
        except Exception as exc:
            self._pool.close()
            raise StorageError(f"cannot open connections to {self.where}: {exc}") from None

    @contextlib.contextmanager
    def tx(self, *lock: str) -> Iterator[Any]:
        """A transaction holding the write locks of the teams in ``lock`` (taken in
        sorted order, so two transactions never wait on each other in a cycle)."""
        try:
            with self._pool.connection() as conn, conn.transaction():
                for team in sorted(set(lock)):
                    lock_team(conn, team)
                yield conn
        except self._psycopg.Error as exc:
            raise StorageError(f"hub database write failed: {brief(exc)}") from exc

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """A pooled connection for reads (each statement its own snapshot)."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except self._psycopg.Error as exc:
            raise StorageError(f"hub database read failed: {brief(exc)}") from exc

    def read(
        self, sql: str, args: Sequence[object] | Mapping[str, object] = ()
    ) -> list[tuple[Any, ...]]:
        with self.reading() as conn:
            return list(conn.execute(sql, args).fetchall())

    def close(self) -> None:
        self._pool.close()


def brief(exc: BaseException) -> str:
    """A database error in one line, without connection parameters."""
    sqlstate = getattr(exc, "sqlstate", None)
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return f"{line} (SQLSTATE {sqlstate})" if sqlstate else line


def redact(dsn: str) -> str:
    """The DSN without its password, for messages and logs."""
    parts = urlsplit(dsn)
    if not parts.scheme:  # a libpq key=value string: show no part of it
        return "(the configured PostgreSQL database)"
    if "password" in parts.query.lower():
        parts = parts._replace(query="")
    if parts.password is None:
        return urlunsplit(parts)
    netloc = f"{parts.username}@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
