"""Store statistics and the ``doctor`` checks.

:func:`doctor_file` never raises for a bad store: a file that is empty, not
SQLite, or that SQLite cannot open is reported as a failed check naming
``sealmem recover``, like a failed ``integrity_check``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...protocol.errors import StoreError
from . import derived, journal, prebaseline
from .access import why_not_writable
from .connection import DIR_MODE, FILE_MODE, connect_readonly
from .journal import RECOVER_HINT
from .memory import Check
from .migrations import schema_version
from .schema import latest_version

__all__ = ["doctor", "doctor_file", "reindex", "stats", "writable"]


def _files(path: Path) -> list[Path]:
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def stats(conn: sqlite3.Connection, path: Path, *, author: str) -> dict[str, Any]:
    """Counts of live memories by kind and project, tombstones, history, sizes."""

    def grouped(column: str) -> dict[str, int]:
        rows = conn.execute(
            f"SELECT {column}, COUNT(*) FROM memories WHERE deleted = 0 "
            f"GROUP BY {column} ORDER BY {column}"
        ).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    live, private, tombstones, history, links = conn.execute(
        "SELECT count(*) FILTER (WHERE deleted = 0), "
        "count(*) FILTER (WHERE deleted = 0 AND visibility = 'private'), "
        "count(*) FILTER (WHERE deleted = 1), "
        "(SELECT count(*) FROM history), (SELECT count(*) FROM supersedes) FROM memories"
    ).fetchone()
    return {
        "path": str(path),
        "author": author,
        "schema_version": schema_version(conn),
        "memories": int(live),
        "private": int(private),
        "tombstones": int(tombstones),
        "history_versions": int(history),
        "supersede_links": int(links),
        "by_kind": grouped("kind"),
        "by_project": grouped("project"),
        "db_bytes": sum(p.stat().st_size for p in _files(path)),
    }


def _check(name: str, run: Callable[[], tuple[bool, str]]) -> Check:
    try:
        ok, detail = run()
    except sqlite3.Error as exc:
        return Check(name, False, f"{exc}; {RECOVER_HINT}")
    return Check(name, bool(ok), str(detail))


def _integrity(conn: sqlite3.Connection) -> tuple[bool, str]:
    rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
    if rows == ["ok"]:
        return True, "SQLite integrity_check: ok"
    return False, "SQLite integrity_check: " + "; ".join(rows[:5]) + f"; {RECOVER_HINT}"


_FTS_CHECK = "INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)"


def _fts(conn: sqlite3.Connection, path: Path) -> tuple[bool, str]:
    try:
        try:
            conn.execute(_FTS_CHECK)
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc):
                raise
            # FTS5 runs its check as an INSERT, which a read-only connection refuses;
            # it writes nothing, so a plain connection does it where the store is writable.
            if not writable(path):
                return True, "not checked: the store is read-only (the check needs write access)"
            with contextlib.closing(sqlite3.connect(str(path), timeout=5)) as plain:
                plain.execute(_FTS_CHECK)
    except sqlite3.DatabaseError as exc:
        return False, (
            f"full-text index out of step with memories ({exc}); rebuild it with 'sealmem reindex'"
        )
    return True, "full-text index matches the memories table"


def _derived(conn: sqlite3.Connection) -> tuple[bool, str]:
    found = derived.drift(conn)
    if found:
        return False, "; ".join(found) + "; count them again with 'sealmem reindex'"
    return True, "the counts kept beside the memories match them"


def _wal(conn: sqlite3.Connection, path: Path) -> tuple[bool, str]:
    mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    if mode != "wal" and _wal_header(path):
        # read as immutable (a directory this user cannot write): SQLite then reports
        # "delete", while the file itself says WAL
        return True, "journal_mode is wal (the file's header; opened read-only here)"
    return mode == "wal", f"journal_mode is {mode}" + ("" if mode == "wal" else "; expected wal")


def _wal_header(path: Path) -> bool:
    """Whether the file's header marks it a WAL database (its format versions, bytes 18
    and 19, are 2: https://sqlite.org/fileformat2.html#the_database_header)."""
    try:
        with open(path, "rb") as f:
            f.seek(18)
            return f.read(2) == b"\x02\x02"
    except OSError:
        return False


def _modes(path: Path) -> tuple[bool, str]:
    problems = []
    for file in _files(path):
        mode = stat.S_IMODE(file.stat().st_mode)
        if mode & ~FILE_MODE:
            problems.append(f"{file.name} is {mode:o} (run: chmod 600 '{file}')")
    parent_mode = stat.S_IMODE(path.parent.stat().st_mode)
    if parent_mode & 0o077:
        problems.append(
            f"directory {path.parent} is {parent_mode:o} (run: chmod {DIR_MODE:o} '{path.parent}')"
        )
    if problems:
        return False, "; ".join(problems)
    return True, f"store files are {FILE_MODE:o} and their directory private"


def _schema(conn: sqlite3.Connection) -> tuple[bool, str]:
    if prebaseline.is_pre_baseline(conn):
        return False, "written by a pre-release build of sealmem: 'sealmem recover' copies it"
    have, want = schema_version(conn), latest_version()
    if have == want:
        return True, f"schema version {have} (current)"
    if have > want:
        return False, f"schema version {have} is newer than {want}: upgrade sealmem"
    return False, (
        f"schema version {have}, this sealmem expects {want}; a write command "
        "('sealmem init') applies the migration"
    )


_TEXT_TABLES = ("memories", "history")
_SHOWN = 10


def _text_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    rows = conn.execute(f"PRAGMA table_info({table})").fetchall()
    return [str(r[1]) for r in rows if str(r[2]).upper() == "TEXT"]


def _damaged_text(conn: sqlite3.Connection) -> tuple[bool, str]:
    """Rows whose text is not valid UTF-8 (read with U+FFFD in its place), by memory id."""
    damaged: dict[str, list[str]] = {}
    for table in _TEXT_TABLES:
        columns = _text_columns(conn, table)
        blobs = ", ".join(f"CAST({c} AS BLOB)" for c in columns)
        for row in conn.execute(f"SELECT id, {blobs} FROM {table}"):
            for column, value in zip(columns, row[1:], strict=True):
                try:
                    (value or b"").decode("utf-8")
                except UnicodeDecodeError:
                    damaged.setdefault(str(row[0]), []).append(f"{table}.{column}")
    if not damaged:
        return True, "all memory text is valid UTF-8"
    shown = "; ".join(f"{i} ({', '.join(c)})" for i, c in list(damaged.items())[:_SHOWN])
    more = f" and {len(damaged) - _SHOWN} more" if len(damaged) > _SHOWN else ""
    count = f"{len(damaged)} {'memory holds' if len(damaged) == 1 else 'memories hold'}"
    return False, (
        f"{count} text that is not valid UTF-8 (read with U+FFFD in place of the bad "
        f"bytes): {shown}{more}; check each with 'sealmem show ID', then correct it "
        "(sealmem remember 'TEXT' --supersedes ID) or drop it (sealmem forget ID --reason 'WHY')"
    )


def _journal(conn: sqlite3.Connection, path: Path) -> tuple[bool, str]:
    """Committed writes gone missing since the journal last counted them (a damaged WAL,
    an older copy put back): the store is marked damaged, so writes are refused."""
    damage = journal.inspect(conn, path, adopt=False)
    if damage is not None:
        return False, journal.damaged_message(path, damage)
    tally, _ = journal.read(path)
    now = journal.measure(conn)
    if tally is None or tally.store_id != now.store_id:
        return True, "no journal of this store yet: its next write starts one"
    return True, (
        f"{now.memories} memories after write {now.commits}; its journal counted "
        f"{tally.memories} after write {tally.commits} ({journal.when(tally.at)}): none lost"
    )


def _mark_damaged(conn: sqlite3.Connection, path: Path, integrity: Check) -> None:
    """A store SQLite calls corrupt refuses writes from now on (see :mod:`.journal`)."""
    before, damage = journal.read(path)
    try:
        tally = journal.measure(conn)
    except sqlite3.Error:  # the rows are damaged; the store's id may still be read
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        except sqlite3.Error:
            return  # too damaged to read its id: no write can open it either
        if row is None:
            return
        kept = before if before is not None and before.store_id == str(row[0]) else None
        tally = journal.Tally(
            str(row[0]), kept.commits if kept else 0, kept.memories if kept else 0, 0
        )
    if damage is None or before is None or before.store_id != tally.store_id:
        first = integrity.detail.split(f"; {RECOVER_HINT}")[0]
        journal.mark(path, tally, f"damaged: SQLite's integrity check failed ({first})")


def doctor(conn: sqlite3.Connection, path: Path) -> list[Check]:
    """Run every check; none raises, each reports ok and what it saw.  A store found
    damaged is marked: writes are refused until ``sealmem recover`` or a restore."""
    integrity = _check("integrity", lambda: _integrity(conn))
    if not integrity.ok:
        _mark_damaged(conn, path, integrity)
    checks = [
        integrity,
        _check("journal", lambda: _journal(conn, path)),
        _check("fts", lambda: _fts(conn, path)),
        _check("derived", lambda: _derived(conn)),
        _check("wal", lambda: _wal(conn, path)),
        _check("schema", lambda: _schema(conn)),
        _check("text", lambda: _damaged_text(conn)),
    ]
    try:
        checks.append(Check("file_modes", *_modes(path)))
    except OSError as exc:
        checks.append(Check("file_modes", False, f"cannot stat the store files: {exc}"))
    checks.append(_writable(path))
    return checks


def writable(path: Path) -> bool:
    """Whether this user can write the store (its file, and its directory for the WAL)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _writable(path: Path) -> Check:
    if writable(path):
        return Check("writable", True, f"{path} and its directory are writable by this user")
    if (cause := why_not_writable(path)) is not None:
        return Check("writable", False, f"the store cannot be written: {cause}; reading works")
    return Check(
        "writable",
        False,
        f"{path} or its directory is not writable by this user: reading works, writing "
        "does not; make both writable by their owner (chmod u+w) to write again",
    )


def doctor_file(path: Path) -> list[Check]:
    """Open ``path`` read-only and run :func:`doctor`; a store that cannot be opened is one
    failed ``open`` check (with the file checks that still apply)."""
    try:
        conn = connect_readonly(path, check_schema=False)
    except StoreError as exc:
        return [Check("open", False, str(exc)), _writable(path)]
    try:
        return doctor(conn, path)
    finally:
        conn.close()


def reindex(
    conn: sqlite3.Connection, progress: Callable[[int, int, str], None] | None = None
) -> dict[str, Any]:
    """Rebuild the full-text indexes and every other derived table from the tables they
    derive from (:func:`sealmem.client.store.derived.rebuild`); run inside a transaction.
    Nothing but derived data changes: memories and history are the source of truth."""
    derived.rebuild(conn, progress)
    memories, history = conn.execute(
        "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM history)"
    ).fetchone()
    return {"memories": int(memories), "history": int(history)}
