"""Salvage what SQLite can still read from a damaged store into a new one.

Python's ``sqlite3`` has no ``.recover`` (the ``sqlite3`` shell's, not a dependency of
sealmem), so the salvage reads the damaged file itself, read-only:

* each table is read the ways :mod:`.salvage` knows (rowid ranges, row by row, from
  both ends), never through an index, and a row that raises is counted as lost; a
  table no read can start on (its root page gone) is named as lost whole;
* rows go into a freshly created store of the current schema (columns matched by
  name, ``INSERT OR IGNORE``); derived tables and columns (:data:`_DERIVED`) are not
  read but computed again (:func:`sealmem.client.store.derived.rebuild`), so a garbled
  one neither loses the memory nor lives on in the new store.

The same salvage copies a store of a pre-release build (:mod:`.prebaseline`) into the
current schema.  The new store replaces the damaged one only when complete
(:func:`recover`).  Processes that keep the store open (an MCP server, ``sync
--watch``) write into neither meanwhile: in place, the store is first held
(:func:`journal.hold`) and its write lock taken once, so every later write sees the
hold (refused, nothing lost); then they see that the file at the path is another one.
What cannot be read at all (a damaged header or schema page) is refused with the
advice to restore a backup: nothing is changed then.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...protocol.errors import StoreError
from ..fsutil import fsync_dir
from . import health, journal, prebaseline
from .connection import (
    BUSY_TIMEOUT_MS,
    check_file,
    connect,
    describe,
    readonly_uri,
    remove_store,
    set_meta,
    transaction,
)
from .migrations import schema_version
from .salvage import Reading, keyed_rows, rowid_rows

__all__ = ["RecoverResult", "recover"]

#: Tables the new store fills itself (its migrations) or derives (:mod:`.derived`).
_SKIPPED = (
    "schema_migrations", "store_counts", "own_counts", "push_dirty", "term_counts",
    "term_counts_at",
)  # fmt: skip


@dataclass
class RecoverResult:
    """What a salvage kept and lost, per table."""

    source: Path
    output: Path
    damaged: Path | None
    recovered: dict[str, int] = field(default_factory=dict)
    lost: dict[str, int] = field(default_factory=dict)
    unreadable_tables: list[str] = field(default_factory=list)
    source_schema: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "output": str(self.output),
            "damaged_copy": None if self.damaged is None else str(self.damaged),
            "recovered": dict(self.recovered),
            "lost": dict(self.lost),
            "unreadable_tables": list(self.unreadable_tables),
            "source_schema_version": self.source_schema,
        }


def _open_damaged(path: Path) -> sqlite3.Connection:
    # Read-only, with its WAL (committed rows may still live there).
    conn = sqlite3.connect(readonly_uri(path), uri=True)
    conn.execute("PRAGMA query_only = ON")
    return conn


def _tables(conn: sqlite3.Connection) -> dict[str, bool]:
    """Ordinary tables of the new store: ``{name: has_rowid}`` (FTS and its shadows left out)."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    virtual = [name for name, sql in rows if str(sql).upper().startswith("CREATE VIRTUAL")]
    found = {}
    for name, sql in rows:
        if name in _SKIPPED or name in virtual or any(name.startswith(v + "_") for v in virtual):
            continue
        found[name] = "WITHOUT ROWID" not in str(sql).upper()
    return found


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")')]


def _key(conn: sqlite3.Connection, table: str) -> list[str]:
    rows = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    return [str(r[1]) for r in sorted((r for r in rows if r[5]), key=lambda r: r[5])]


_DERIVED = {"memories": ("stems", "grams", "norm_hash", "bucket_key")}
"""Columns computed from a row's other columns: ``stems``, ``grams`` and ``norm_hash`` are filled
again from the text by the rebuild, ``bucket_key`` by the next push (NULL: what a local
write leaves)."""


def _copy(src: sqlite3.Connection, dst: sqlite3.Connection, result: RecoverResult) -> None:
    have = {
        str(r[0])
        for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    }
    for table, has_rowid in _tables(dst).items():
        if table not in have:
            continue
        try:
            wanted = [c for c in _columns(dst, table) if c not in _DERIVED.get(table, ())]
            common = [c for c in _columns(src, table) if c in wanted]
        except sqlite3.DatabaseError:
            result.unreadable_tables.append(table)
            continue
        cols = ", ".join(f'"{c}"' for c in common)
        insert = (
            f'INSERT OR {"REPLACE" if table == "meta" else "IGNORE"} INTO "{table}" ({cols}) '
            f"VALUES ({', '.join('?' * len(common))})"
        )
        tally = Reading()
        rows = (
            rowid_rows(src, table, cols, tally)
            if has_rowid
            else keyed_rows(src, table, cols, _key(dst, table), tally)
        )
        kept = 0
        for row in rows:
            try:
                kept += dst.execute(insert, row).rowcount
            except sqlite3.DatabaseError:  # a row that breaks the schema's rules
                tally.lost += 1
        if not tally.started:  # no query could even start: its root page is gone
            result.unreadable_tables.append(table)
            continue
        result.recovered[table] = kept
        result.lost[table] = tally.lost


def _new_identity(dst: sqlite3.Connection) -> None:
    """The salvaged store is a new store: its own id and write count, so the damaged
    one's journal (its mark, its higher count) never applies to it, wherever it is put."""
    set_meta(dst, "store_id", os.urandom(16).hex())
    dst.execute("DELETE FROM meta WHERE key = ?", (journal.COMMITS_KEY,))


_Journal = tuple[journal.Tally | None, journal.Damage | None]


def _hold_writers(path: Path) -> _Journal:
    """Stop every other writer of the store at ``path``: hold it, then take its write lock
    once (a write under way finishes first and is salvaged; every later one sees the hold
    under the lock and is refused).  Returns the journal as it was, for :func:`_release`."""
    before = journal.read(path)
    journal.hold(path)
    try:
        barrier = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error:
        return before  # SQLite cannot open it for writing: nobody else can write it either
    try:
        barrier.execute("BEGIN IMMEDIATE")
        barrier.execute("ROLLBACK")
    except sqlite3.DatabaseError as exc:  # else a file SQLite cannot write: nobody writes it
        if "locked" in str(exc) or "busy" in str(exc):
            _release(path, before)
            raise describe(path, exc) from exc
    finally:
        barrier.close()  # the salvage still reads the file: this close checkpoints nothing
    return before


def _release(path: Path, before: _Journal) -> None:
    """Put the journal back as :func:`_hold_writers` found it (the salvage failed)."""
    journal.unhold(path)
    tally, damage = before
    if tally is None:
        with contextlib.suppress(OSError):
            journal.journal_path(path).unlink(missing_ok=True)
    else:
        journal.put(path, tally, damage)


def _stamp(now_ms: int) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_ms / 1000))


def _link_names(given: Path, path: Path) -> list[Path]:
    """``given``, each link it leads through (a link to a link, relative or not), then
    the file ``path`` they resolve to: the names a writer may have opened the store by."""
    names = [given]
    at = given
    while at.is_symlink() and len(names) < _MAX_LINKS:
        at = Path(os.path.normpath(at.parent / os.readlink(at)))
        if at in names:
            break
        names.append(at)
    if path not in names:
        names.append(path)
    return names


_MAX_LINKS = 40  # as many as Linux follows in one path


def _salvage(
    src: sqlite3.Connection, fresh: Path, hold: list[Path], now_ms: int, result: RecoverResult
) -> None:
    """Copy what ``src`` holds into a new store at ``fresh``, the writers of every name in
    ``hold`` stopped meanwhile; on failure nothing is left there and each hold is released."""
    remove_store(fresh)
    held: list[tuple[Path, _Journal]] = []
    try:
        for name in hold:
            held.append((name, _hold_writers(name)))
        dst = connect(fresh, now_ms=now_ms, journaled=False)
        try:
            dst.execute("PRAGMA foreign_keys = OFF")
            with transaction(dst):
                _copy(src, dst, result)
                _new_identity(dst)
                health.reindex(dst)
            dst.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            dst.close()
    except BaseException:
        remove_store(fresh)
        for name, before in held:
            _release(name, before)
        raise


def recover(path: Path, *, output: Path | None = None, now_ms: int) -> RecoverResult:
    """Salvage the store at ``path`` into ``output`` (default: in place, at ``path``).

    In place, the damaged file moves to ``<path>.damaged-<time>`` (with its
    ``-wal``/``-shm``) and the salvaged store takes its name; with ``output`` the
    damaged file stays where it is and ``output`` must not exist yet.  A ``path``
    that is a symlink stays one: the file it points to is salvaged in place, and
    the damaged copy is kept beside that file.
    """
    given = Path(path).absolute()
    if not given.exists():
        raise StoreError(f"there is no store at {given} to recover")
    if output is not None and Path(output).exists():
        raise StoreError(f"{output} already exists; choose a new path with --output")
    # The store file itself: a symlinked store path (a home whose store lives on another
    # disk) keeps its link, and the link points at the salvaged store.  SQLite keeps the
    # -wal and -shm beside the file the link resolves to, so those move with it.
    path = Path(os.path.realpath(given))
    # every name a writer may hold the store by: each is held during the salvage
    names = _link_names(given, path)
    target = path if output is None else Path(output).absolute()
    result = RecoverResult(given, target, None)
    try:
        check_file(path)
        src = _open_damaged(path)
        result.source_schema = schema_version(src)
        old = prebaseline.is_pre_baseline(src)
    except (StoreError, sqlite3.DatabaseError) as exc:
        # the opener's sentence without its fix, which is this command
        cause = str(exc).removesuffix(f"; nothing was changed: {journal.RECOVER_HINT}")
        raise StoreError(
            f"SQLite cannot read the header or schema of {path} ({cause}), so nothing can be "
            "salvaged from it by sealmem; nothing was changed. Restore a backup with "
            "'sealmem import <export.json>' (after moving the file aside), or try the "
            "'sqlite3' shell's '.recover' command on a copy"
        ) from exc
    fresh = target.with_name(f".{target.name}.recover-{os.getpid()}")
    try:
        _salvage(src, fresh, names if output is None else [], now_ms, result)
    finally:
        src.close()
    if output is None:
        kept = "pre-baseline" if old else "damaged"
        result.damaged = path.with_name(f"{path.name}.{kept}-{_stamp(now_ms)}")
        for suffix in ("-wal", "-shm", ""):
            with contextlib.suppress(FileNotFoundError):
                os.rename(f"{path}{suffix}", f"{result.damaged}{suffix}")
    os.rename(fresh, target)
    # The salvaged store starts a new write journal: what it lost is known and shown.
    for name in names if output is None else [target]:
        with contextlib.suppress(FileNotFoundError):
            journal.journal_path(name).unlink()
    if output is None:
        for name in names:
            journal.unhold(name)  # after the new store is in place: old handles see it moved
    fsync_dir(target.parent)
    return result
