"""The SQLite connection under the local store: files, WAL, locking, migrations.

One store is one SQLite file in WAL mode.  A connection is confined to the
thread that opened it; several processes may share the file (WAL readers never
block, writers take ``BEGIN IMMEDIATE`` and wait up to :data:`BUSY_TIMEOUT_MS`).
Migrations are forward-only (:mod:`sealmem.client.store.schema`): a store written by
a newer sealmem is refused rather than guessed at.  A store is created atomically
(:func:`connect`), so a 0-byte file or one that is not SQLite is refused
(:class:`DamagedStoreError`), never silently turned into an empty store.

Every ``sqlite3`` failure is translated into :class:`StoreError` at this
boundary, with the path and what to do about it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import secrets
import sqlite3
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from ...protocol.errors import InputError, StoreError
from . import journal
from .access import why_not_writable
from .migrations import migrate, unmigrated
from .schema import MIGRATIONS, Migration
from .text import read_text

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DIR_MODE",
    "FILE_MODE",
    "DamagedStoreError",
    "StoreLockedError",
    "StoreReplacedError",
    "check_file",
    "connect",
    "connect_readonly",
    "describe",
    "get_meta",
    "readonly_uri",
    "remove_store",
    "replaced",
    "set_meta",
    "sqlite_errors",
    "transaction",
]

BUSY_TIMEOUT_MS = 5_000
DIR_MODE = 0o700
FILE_MODE = 0o600
#: The first 16 bytes of every SQLite 3 database file.
_SQLITE_HEADER = b"SQLite format 3\x00"

_savepoints = itertools.count(1)


class StoreLockedError(StoreError):
    """Another process held the store's write lock for longer than the busy timeout."""


class DamagedStoreError(StoreError):
    """The store file is empty, not SQLite, or SQLite reports it corrupt."""


class StoreReplacedError(StoreError):
    """The store file this connection opened is no longer at its path (``sealmem
    recover`` or a restore put another there): a write would be lost with the old file."""


class _StoreConnection(sqlite3.Connection):
    """A writable store's connection: where its journal lives (:mod:`.journal`), which
    file it opened (device, inode), and why :func:`transaction` refuses writes."""

    store_path: Path | None = None
    refusal: str | None = None
    identity: tuple[int, int] | None = None


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def replaced(conn: sqlite3.Connection) -> bool:
    """Whether the file at the store's path is no longer the one ``conn`` opened."""
    if not isinstance(conn, _StoreConnection) or conn.store_path is None:
        return False
    return conn.identity is not None and _identity(conn.store_path) != conn.identity


def _damaged(path: Path | str, what: str) -> DamagedStoreError:
    return DamagedStoreError(
        f"the store {path} {what}; nothing was changed: {journal.RECOVER_HINT}"
    )


def describe(path: Path | str, exc: sqlite3.Error) -> StoreError:
    """A :class:`StoreError` saying what ``exc`` means for the store at ``path``, and the fix."""
    text = " ".join(str(exc).split())  # one line, also when SQLite quotes a multi-line schema
    code = getattr(exc, "sqlite_errorname", "")
    if code == "SQLITE_FULL" or "disk is full" in text:
        return StoreError(
            f"the disk holding the store {path} is full ({text}): free some space and "
            "run the command again; nothing was lost"
        )
    if code.startswith("SQLITE_READONLY") or "readonly database" in text:
        if (cause := why_not_writable(Path(path))) is not None:
            return StoreError(
                f"the store {path} cannot be written: {cause}; reading still works (list, "
                "recall, show, export); nothing was lost"
            )
        return StoreError(
            f"the store {path} cannot be written ({text}): check that its disk is not "
            "mounted read-only and that this user owns the file, or set SEALMEM_HOME to "
            "a writable directory; nothing was lost"
        )
    if code.startswith("SQLITE_IOERR") or "disk I/O error" in text:
        return StoreError(
            f"the disk holding the store {path} failed to read or write ({text}): check "
            "the disk (and free space), then run the command again; 'sealmem doctor' "
            "checks the store"
        )
    if "locked" in text or "busy" in text:
        return StoreLockedError(
            f"the store {path} is locked by another sealmem process ({text}); "
            "wait for it to finish and retry"
        )
    if isinstance(exc, sqlite3.DatabaseError) and (
        "not a database" in text or "malformed" in text or "corrupt" in text
    ):
        return _damaged(path, f"is not a usable SQLite database ({text})")
    if "readonly" in text or "read-only" in text:
        return StoreError(
            f"the store {path} is read-only ({text}); reading commands (list, recall, show, "
            "export, stats, doctor) still work; to write, make the file and its directory "
            "writable by this user"
        )
    return StoreError(f"the store {path} failed: {text}; 'sealmem doctor' checks it")


@contextlib.contextmanager
def sqlite_errors(path: Path | str) -> Iterator[None]:
    """Translate any ``sqlite3.Error`` raised inside into a :class:`StoreError`, and a
    text SQLite cannot take (a lone surrogate has no UTF-8 form) into an :class:`InputError`."""
    try:
        yield
    except sqlite3.Error as exc:
        raise describe(path, exc) from exc
    except UnicodeEncodeError as exc:
        char = exc.object[exc.start : exc.start + 1] if isinstance(exc.object, str) else ""
        raise InputError(
            f"a text holds a lone surrogate U+{ord(char or chr(0xFFFD)):04X} (no UTF-8 form: "
            "often bytes in another encoding, or a JSON '\\udXXX' escape), which the store "
            f"cannot hold; nothing was stored in {path}: convert the input to UTF-8"
        ) from exc


def check_file(path: Path) -> bool:
    """Whether a store file exists at ``path``; :class:`DamagedStoreError` (naming the way
    out) if what is there does not start with the SQLite header, 0 bytes included."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StoreError(f"cannot look at the store {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise StoreError(f"the store path {path} exists but is not a file; choose another path")
    if info.st_size == 0:
        raise _damaged(path, "is an empty file (0 bytes), not a sealmem store")
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise StoreError(
            f"cannot read the store {path}: {exc.strerror}; check its owner and mode"
        ) from exc
    if head != _SQLITE_HEADER:
        raise _damaged(
            path, "is not a usable SQLite database (it does not start with the SQLite header)"
        )
    return True


def _make_dirs(path: Path) -> None:
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=DIR_MODE)
            os.chmod(directory, DIR_MODE)


def _create_store(path: Path) -> None:
    """Create an empty WAL store at ``path`` unless a file is already there: initialised
    under a temporary name, then hard-linked into place, so ``path`` is never 0 bytes."""
    _make_dirs(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.new")
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    os.close(fd)
    try:
        os.chmod(tmp, FILE_MODE)
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")  # writes the header page
        finally:
            conn.close()
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        remove_store(tmp)


def remove_store(path: Path) -> None:
    """Delete the store file at ``path`` and its ``-wal`` and ``-shm``, where they exist."""
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(leftover)


def connect(
    path: Path,
    *,
    now_ms: int | None = None,
    migrations: Sequence[Migration] = MIGRATIONS,
    journaled: bool = True,
    migrating: bool = True,
) -> sqlite3.Connection:
    """Open the store at ``path`` (created if absent, its directories 0700 and file 0600);
    migrate its schema (not ``migrating``: :func:`~.migrations.unmigrated`).  With
    ``journaled`` every write is counted in the store's journal and checked against it on
    open: a store that lost committed writes is marked damaged and this connection
    refuses writes."""
    path = Path(path)
    if not check_file(path):
        try:
            _create_store(path)
        except (OSError, sqlite3.Error) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise StoreError(
                f"cannot create the store {path}: {reason}; check the directory's "
                "permissions or set SEALMEM_HOME to a writable directory"
            ) from exc
        check_file(path)
    conn: sqlite3.Connection | None = None
    try:
        with sqlite_errors(path):
            conn = sqlite3.connect(
                str(path),
                isolation_level=None,
                timeout=BUSY_TIMEOUT_MS / 1000,
                factory=_StoreConnection,
            )
            conn.text_factory = read_text
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
            migrated = migrate(conn, migrations, now_ms=now_ms, path=path, start=migrating)
            if get_meta(conn, "store_id") is None:
                with transaction(conn):
                    if get_meta(conn, "store_id") is None:
                        set_meta(conn, "store_id", os.urandom(16).hex())
            if migrated:  # a new store's id too is in the main file, not only the WAL
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            if journaled:
                conn.identity = _identity(path)
                damage = journal.inspect(conn, path, adopt=True)
                conn.store_path = path
                if damage is not None:
                    conn.refusal = journal.damaged_message(path, damage)
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    return conn


def readonly_uri(path: Path) -> str:
    """The URI that opens ``path`` read-only; immutable in a directory this user cannot
    write, where SQLite cannot make the ``-shm`` file a WAL reader needs (nobody can be
    writing it there: a writer needs that directory too)."""
    uri = f"file:{quote(str(path))}?mode=ro"
    if not os.access(path.parent, os.W_OK) and not Path(f"{path}-shm").exists():
        uri += "&immutable=1"
    return uri


def connect_readonly(path: Path, *, check_schema: bool = True) -> sqlite3.Connection:
    """Open the existing store at ``path`` read-only (:func:`readonly_uri`): no migration,
    no write.  With ``check_schema``, a store that needs a schema migration raises
    :class:`~.migrations.MigrationNeededError` (one lacking only data-only steps is read
    as it is, :func:`~.migrations.unmigrated`), one from a newer sealmem :class:`StoreError`."""
    path = Path(path)
    if not check_file(path):
        raise StoreError(f"there is no store at {path}; 'sealmem init' creates one")
    conn: sqlite3.Connection | None = None
    try:
        with sqlite_errors(path):
            conn = sqlite3.connect(
                readonly_uri(path), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
            )
            conn.text_factory = read_text
            if check_schema:
                unmigrated(conn, path, MIGRATIONS)  # data-only steps left: read as it is
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    return conn


def _check_writable(conn: sqlite3.Connection, *, fresh: bool = False) -> None:
    """Refuse a write to a replaced store, or one marked damaged (``fresh``: read the
    mark again, another process may have set it)."""
    if not isinstance(conn, _StoreConnection) or conn.store_path is None:
        return
    if replaced(conn):
        raise StoreReplacedError(
            f"the store {conn.store_path} was replaced or moved (by 'sealmem recover', a "
            "restore, or by hand) while this process had it open; nothing was written. Run "
            "the command again (an MCP server reopens the store by itself at its next call)"
        )
    refusal = conn.refusal  # damage this connection found when it opened: for good
    if refusal is None and fresh:
        # read every time, never kept: a salvage that gave up takes its mark back
        refusal = journal.refusal(conn.store_path)
    if refusal is not None:
        raise DamagedStoreError(refusal)


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction: ``BEGIN IMMEDIATE`` (a savepoint when already inside one),
    committed on success, rolled back on any exception."""
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
    journal_of = conn.store_path if isinstance(conn, _StoreConnection) else None
    _check_writable(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Again under the write lock: 'sealmem recover' marks the store and then takes
        # the lock once, so every write after that sees its mark, then its new file.
        _check_writable(conn, fresh=True)
        yield conn
        if journal_of is not None:
            journal.count_commit(conn)
    except BaseException:
        # SQLite may already have rolled back (e.g. after a disk-full error).
        with contextlib.suppress(sqlite3.OperationalError):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    if journal_of is not None:
        journal.record(conn, journal_of)


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
