"""The SQLite layer: files and modes, WAL, migrations, refusal of newer or corrupt stores."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store.connection import (
    BUSY_TIMEOUT_MS,
    connect,
    connect_readonly,
    transaction,
)
from sealmem.client.store.migrations import migrate, schema_version
from sealmem.client.store.schema import MIGRATIONS, Migration, latest_version
from sealmem.protocol.errors import StoreError

from .conftest import START_MS, OpenStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_store_files_are_private(open_store: OpenStore, home: Path) -> None:
    store = open_store()
    store.remember("the wal file exists after a write")
    assert store.path == home / "store.db"
    assert mode(home) == 0o700
    for suffix in ("", "-wal", "-shm"):
        assert mode(Path(f"{store.path}{suffix}")) == 0o600, suffix
    assert mode(home / "identity.json") == 0o600


def test_explicit_path_creates_missing_dirs_0700(open_store: OpenStore, tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "mem.db"
    store = open_store(target)
    assert store.path == target
    assert mode(tmp_path / "deep") == 0o700
    assert mode(tmp_path / "deep" / "er") == 0o700
    assert mode(target) == 0o600


def test_wal_mode_and_migrations_recorded(store: MemoryStore) -> None:
    conn = store.connection
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = conn.execute("SELECT version, name, applied_at FROM schema_migrations").fetchall()
    assert [r[0] for r in rows] == [m.version for m in MIGRATIONS]
    assert [r[1] for r in rows] == [m.name for m in MIGRATIONS]
    assert all(r[2] > START_MS for r in rows)  # stamped by the store's clock
    assert schema_version(conn) == latest_version()


def test_reopening_applies_nothing_twice(open_store: OpenStore, home: Path) -> None:
    open_store().close()
    conn = sqlite3.connect(home / "store.db")
    try:
        assert migrate(conn) == []
        count = conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0]
        assert count == len(MIGRATIONS)
    finally:
        conn.close()


def test_a_later_migration_is_applied_to_an_old_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    connect(path, migrations=MIGRATIONS[:1]).close()
    extra = Migration(len(MIGRATIONS) + 1, "test column", "ALTER TABLE meta ADD COLUMN note TEXT")
    conn = connect(path, migrations=[*MIGRATIONS, extra])
    try:
        assert schema_version(conn) == extra.version
        columns = [r[1] for r in conn.execute("PRAGMA table_info(meta)")]
        assert "note" in columns
    finally:
        conn.close()


def test_failed_migration_rolls_back_and_records_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    connect(path).close()
    broken = Migration(
        len(MIGRATIONS) + 1,
        "broken",
        "CREATE TABLE t (x INTEGER);\nINSERT INTO nowhere VALUES (1);",
    )
    with pytest.raises(StoreError, match="nowhere"):
        connect(path, migrations=[*MIGRATIONS, broken])
    conn = connect(path)
    try:
        assert schema_version(conn) == latest_version()
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
        assert "t" not in names
    finally:
        conn.close()


def test_newer_schema_is_refused_with_the_fix(open_store: OpenStore, home: Path) -> None:
    open_store().close()
    conn = sqlite3.connect(home / "store.db")
    conn.execute(
        "INSERT INTO schema_migrations VALUES (?, 'from the future', 0)", (latest_version() + 5,)
    )
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"schema version \d+.*upgrade sealmem"):
        MemoryStore.open()


def test_misnumbered_migrations_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="numbered"):
        connect(tmp_path / "s.db", migrations=[Migration(2, "skips one", "SELECT 1")])


def test_a_data_only_migration_with_sql_is_refused(tmp_path: Path) -> None:
    bad = Migration(len(MIGRATIONS) + 1, "data only", "ALTER TABLE meta ADD x", data_only=True)
    with pytest.raises(StoreError, match="data only but changes the schema"):
        connect(tmp_path / "s.db", migrations=[*MIGRATIONS, bad])


def test_corrupt_file_gives_a_clear_store_error(home: Path) -> None:
    home.mkdir(mode=0o700)
    (home / "store.db").write_bytes(b"this is not sqlite at all " * 200)
    with pytest.raises(StoreError) as info:
        MemoryStore.open()
    message = str(info.value)
    assert "not a usable SQLite database" in message
    assert str(home / "store.db") in message
    assert "sealmem import" in message


def test_store_path_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(StoreError, match="not a file"):
        MemoryStore.open(tmp_path / "dir.db")


def write_then_fail(conn: sqlite3.Connection, sql: str) -> None:
    with transaction(conn):
        conn.execute(sql)
        raise RuntimeError("boom")


def test_transaction_rolls_back_on_error(store: MemoryStore) -> None:
    conn = store.connection
    with pytest.raises(RuntimeError):
        write_then_fail(conn, "INSERT INTO meta (key, value) VALUES ('k', 'v')")
    assert conn.execute("SELECT COUNT(*) FROM meta WHERE key = 'k'").fetchone()[0] == 0
    with transaction(conn):
        conn.execute("INSERT INTO meta (key, value) VALUES ('k', 'outer')")
        with pytest.raises(RuntimeError):
            write_then_fail(conn, "UPDATE meta SET value = 'inner' WHERE key = 'k'")
    assert conn.execute("SELECT value FROM meta WHERE key = 'k'").fetchone()[0] == "outer"


def test_every_connection_waits_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    for conn in (connect(path), connect_readonly(path)):
        try:
            assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
        finally:
            conn.close()


def test_a_second_writer_waits_then_reports_lock(tmp_path: Path) -> None:
    from sealmem.client.store import connection as store_module

    path = tmp_path / "s.db"
    holder = connect(path)
    other = connect(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        other.execute("PRAGMA busy_timeout = 50")
        with (
            pytest.raises(store_module.StoreLockedError, match="locked"),
            store_module.sqlite_errors(path),
            transaction(other),
        ):
            pass
        # Readers are never blocked by a writer in WAL mode.
        assert other.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 0
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        other.close()


def test_store_id_is_set_once(open_store: OpenStore, home: Path) -> None:
    first = open_store().export()["store_id"]
    second = open_store().export()["store_id"]
    assert isinstance(first, str)
    assert len(first) == 32
    assert first == second
