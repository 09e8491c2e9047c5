"""The SQLite connection under the local store: files, WAL, locking, migrations.

One store is one SQLite file in WAL mode.  A connection is confined to the
thread that opened it; several processes may share the file (WAL readers never
block, writers take ``BEGIN IMMEDIATE`` and wait up to :data:`BUSY_TIMEOUT_MS`).
Migrations are forward-only (:mod:`sealmem.client.store.schema`): a store written by
a newer sealmem is refused rather than guessed at.

Every ``sqlite3`` failure is translated into :class:`StoreError` at this
boundary, with the path and what to do about it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from ...protocol.errors import StoreError
from ..clock import now_ms as wall_clock
from .schema import MIGRATIONS, Migration

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DIR_MODE",
    "FILE_MODE",
    "StoreLockedError",
    "connect",
    "get_meta",
    "migrate",
    "schema_version",
    "set_meta",
    "sqlite_errors",
    "transaction",
]

BUSY_TIMEOUT_MS = 5_000
DIR_MODE = 0o700
FILE_MODE = 0o600

_savepoints = itertools.count(1)


class StoreLockedError(StoreError):
    """Another process held the store's write lock for longer than the busy timeout."""


def _describe(path: Path | str, exc: sqlite3.Error) -> StoreError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return StoreLockedError(
            f"the store {path} is locked by another sealmem process ({text}); "
            "wait for it to finish and retry"
        )
    if isinstance(exc, sqlite3.DatabaseError) and (
        "not a database" in text or "malformed" in text or "corrupt" in text
    ):
        return StoreError(
            f"the store {path} is not a usable SQLite database ({text}); move the file "
            "aside, then restore it with 'sealmem import <export.json>' or start afresh "
            "with 'sealmem init'; 'sealmem doctor' shows what is wrong"
        )
    return StoreError(f"the store {path} failed: {text}; 'sealmem doctor' checks it")


@contextlib.contextmanager
def sqlite_errors(path: Path | str) -> Iterator[None]:
    """Translate any ``sqlite3.Error`` raised inside into a :class:`StoreError`."""
    try:
        yield
    except sqlite3.Error as exc:
        raise _describe(path, exc) from exc


def _create_file(path: Path) -> None:
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=DIR_MODE)
            os.chmod(directory, DIR_MODE)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    except FileExistsError:
        return
    os.close(fd)
    os.chmod(path, FILE_MODE)


def connect(
    path: Path, *, now_ms: int | None = None, migrations: Sequence[Migration] = MIGRATIONS
) -> sqlite3.Connection:
    """Open (creating if needed) the store at ``path`` and bring its schema up to date.

    New directories get mode 0700 and a new file 0600 (SQLite gives its ``-wal``
    and ``-shm`` files the database's mode).
    """
    path = Path(path)
    if path.exists() and not stat.S_ISREG(path.stat().st_mode):
        raise StoreError(f"the store path {path} exists but is not a file; choose another path")
    try:
        _create_file(path)
    except OSError as exc:
        raise StoreError(
            f"cannot create the store {path}: {exc.strerror}; check the directory's "
            "permissions or set SEALMEM_HOME to a writable directory"
        ) from exc
    conn: sqlite3.Connection | None = None
    try:
        with sqlite_errors(path):
            conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(
                    f"the store {path} could not switch to WAL mode (got {mode!r}); "
                    "keep the store on a local disk, not a network share"
                )
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            # Deleted rows (a forgotten memory's versions) are overwritten, not left in
            # free space: see sealmem.client.store.scrub.
            conn.execute("PRAGMA secure_delete = ON")
            if migrate(conn, migrations, now_ms=now_ms, path=path):
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if get_meta(conn, "store_id") is None:
                with transaction(conn):
                    if get_meta(conn, "store_id") is None:
                        set_meta(conn, "store_id", os.urandom(16).hex())
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    return conn


def schema_version(conn: sqlite3.Connection) -> int:
    """The highest migration recorded in the store (0 for an empty store)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def _check_sequence(migrations: Sequence[Migration]) -> None:
    for expected, migration in enumerate(migrations, start=1):
        if migration.version != expected:
            raise StoreError(
                f"migration {migration.name!r} has version {migration.version}, expected "
                f"{expected}: migrations must be numbered 1, 2, 3, ... in order"
            )


def migrate(
    conn: sqlite3.Connection,
    migrations: Sequence[Migration] = MIGRATIONS,
    *,
    now_ms: int | None = None,
    path: Path | str = "<store>",
) -> list[int]:
    """Apply every migration the store lacks, each in its own transaction.

    Returns the versions applied.  Raises :class:`StoreError` if the store was
    written by a newer sealmem (its version is above the last one known here).
    """
    _check_sequence(migrations)
    known = migrations[-1].version if migrations else 0
    applied: list[int] = []
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)"
    )
    while True:
        with transaction(conn):
            current = schema_version(conn)
            if current > known:
                raise StoreError(
                    f"the store {path} has schema version {current}, but this sealmem "
                    f"knows versions up to {known}; upgrade sealmem "
                    "('pip install -U sealmem') to open it"
                )
            if current == known:
                return applied
            step = migrations[current]
            stamp = now_ms if now_ms is not None else wall_clock()
            for statement in _statements(step.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (step.version, step.name, stamp),
            )
            applied.append(step.version)


def _statements(sql: str) -> Iterator[str]:
    """Split a script into complete statements (triggers keep their inner ``;``)."""
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


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction: ``BEGIN IMMEDIATE`` (a savepoint when already inside one).

    Commits on success, rolls back on any exception.
    """
    if conn.in_transaction:
        name = f"sp_{next(_savepoints)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        # SQLite may already have rolled back (e.g. after a disk-full error).
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
