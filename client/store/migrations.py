"""The migration runner: applies the schema steps a store lacks (:mod:`.schema`).

Migrations are forward-only: a store written by a newer sealmem is refused rather
than guessed at, and one of a pre-release build (:mod:`.prebaseline`) is refused with
the way out.  Each step runs in its own transaction at open, before the store's
write journal is attached (:func:`sealmem.client.store.connection.connect`); an open
that must not start one (a hook, within its two seconds) opens a store lacking only
data-only steps as it is and refuses one lacking a schema step (:func:`unmigrated`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from ...protocol.errors import StoreError
from ..clock import now_ms as wall_clock
from . import prebaseline
from .schema import MIGRATIONS, Migration

__all__ = ["MigrationNeededError", "migrate", "schema_version", "unmigrated"]


class MigrationNeededError(StoreError):
    """An open that does not migrate found a store whose schema is older than this
    sealmem's: at ``version``, it needs migration ``needed`` to be read."""

    def __init__(self, message: str, *, version: int, needed: int) -> None:
        super().__init__(message)
        self.version = version
        self.needed = needed


def schema_version(conn: sqlite3.Connection) -> int:
    """The highest migration recorded in the store (0 for an empty store)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def _versions(
    conn: sqlite3.Connection, path: Path | str, migrations: Sequence[Migration]
) -> tuple[int, int]:
    """(the store's schema version, the last one known here); refuses a store of a
    pre-release build or of a newer sealmem."""
    prebaseline.check(conn, path, migrations[0].name)
    current, known = schema_version(conn), migrations[-1].version
    if current > known:
        raise StoreError(
            f"the store {path} has schema version {current}, but this sealmem knows "
            f"versions up to {known}; upgrade sealmem ('pip install -U sealmem') to open it"
        )
    return current, known


def unmigrated(
    conn: sqlite3.Connection, path: Path | str, migrations: Sequence[Migration] = MIGRATIONS
) -> list[int]:
    """Without migrating: the versions the store lacks, each of them data only (this code
    reads and writes the store as it is, :class:`~.schema.Migration`); one that changes
    the schema raises :class:`MigrationNeededError` (see :func:`_versions` too)."""
    _check_sequence(migrations)
    current, known = _versions(conn, path, migrations)
    missing = migrations[current:known]
    needed = [step.version for step in missing if not step.data_only]
    if needed:
        raise MigrationNeededError(
            f"the store {path} has schema version {current} and needs migration "
            f"{needed[0]} to be read by this sealmem; this open does not migrate it: run "
            "a write command ('sealmem init') once to apply the migration",
            version=current,
            needed=needed[0],
        )
    return [step.version for step in missing]


def _check_sequence(migrations: Sequence[Migration]) -> None:
    for expected, migration in enumerate(migrations, start=1):
        if migration.version != expected:
            raise StoreError(
                f"migration {migration.name!r} has version {migration.version}, expected "
                f"{expected}: migrations must be numbered 1, 2, 3, ... in order"
            )
        if migration.data_only and migration.sql.strip():
            raise StoreError(
                f"migration {migration.name!r} is data only but changes the schema: a "
                "data-only step has no SQL, only its fill"
            )


def migrate(
    conn: sqlite3.Connection,
    migrations: Sequence[Migration] = MIGRATIONS,
    *,
    now_ms: int | None = None,
    path: Path | str = "<store>",
    start: bool = True,
) -> list[int]:
    """Apply every migration the store lacks, each in its own transaction (``BEGIN
    IMMEDIATE``, rolled back on any error).  Returns the versions applied.  A store
    that lacks none takes no write lock: an open must not wait for another process's
    write (a hook has two seconds).  Not ``start``: none is applied, a store that
    cannot be used without one is refused (:func:`unmigrated`)."""
    if not start:
        unmigrated(conn, path, migrations)
        return []
    _check_sequence(migrations)
    current, known = _versions(conn, path, migrations)
    if current == known:
        return []
    applied: list[int] = []
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            current, known = _versions(conn, path, migrations)
            if current < known:
                step = migrations[current]
                for statement in _statements(step.sql):
                    conn.execute(statement)
                if step.fill is not None:
                    step.fill(conn)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (step.version, step.name, wall_clock() if now_ms is None else now_ms),
                )
                applied.append(step.version)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        if current == known:
            return applied


def _statements(sql: str) -> Iterator[str]:
    """Split a script into complete statements (a trigger keeps its inner ``;``)."""
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer.strip()
            buffer = ""
    if buffer.strip() and sqlite3.complete_statement(buffer + ";"):
        yield buffer.strip()
    elif buffer.strip():
        raise StoreError(f"migration SQL ends with an incomplete statement: {buffer.strip()!r}")
