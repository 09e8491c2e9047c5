"""The dirty-bucket log read back as bucket keys: from the stored column for rows still in the
store, hashed from the id for rows gone since; a full rebuild reads no key at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.sync import outgoing
from sealmem.client.sync.apply import apply_versions
from sealmem.crypto import SUITE
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.snapshot import bucket_key
from tests.sync.conftest import World

PROJECT = "webapp"
ME = "a" * 26


def test_keys_equal_the_hash_of_every_logged_id(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path / "store.db", author=ME)
    conn = store.connection
    with transaction(conn):
        ids = [store.remember(f"note {i}", project=PROJECT).memory.id for i in range(30)]
    with transaction(conn):
        conn.executemany(
            "INSERT INTO push_dirty (project, id) VALUES (?, ?)",
            [(PROJECT, "01ARZ3NDEKTSV4RRFFQ69G5FAV"), (PROJECT, "gone-from-the-store")],
        )
    with transaction(conn):
        assert outgoing.fill_bucket_keys(conn, PROJECT) == 30
        dirty = outgoing.dirty_since(conn, ME, PROJECT, 0, 0)
        upto = outgoing.dirty_upto(conn, PROJECT)
    logged = [*ids, "01ARZ3NDEKTSV4RRFFQ69G5FAV", "gone-from-the-store"]
    assert dirty.keys == frozenset(bucket_key(SUITE, i) for i in logged)
    assert dirty.upto == upto == conn.execute("SELECT MAX(seq) FROM push_dirty").fetchone()[0]
    with transaction(conn):
        outgoing.clear_dirty(conn, PROJECT, upto)
        assert outgoing.dirty_upto(conn, PROJECT) == 0
        assert outgoing.dirty_since(conn, ME, PROJECT, 0, 0).keys == frozenset()
    store.close()


@pytest.mark.slow
def test_pulled_rows_get_their_bucket_key_at_insert(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pulled new row is stored with its bucket key, so the reader's next push has none
    of them to fill (it cost an UPDATE a row: ~10 µs, every pulled row of a first sync)."""
    bob, admin = world.nodes["bob"], world.nodes["admin"]
    for i in range(40):
        admin.remember(f"the cache of service {i} is keyed by the lockfile")
    admin.sync()
    filled: list[int] = []
    real = outgoing.fill_bucket_keys

    def spy(conn: sqlite3.Connection, project: str) -> int:
        filled.append(real(conn, project))
        return filled[-1]

    monkeypatch.setattr(outgoing, "fill_bucket_keys", spy)
    bob.remember("one of bob's own")  # so that bob's sync pushes
    bob.sync()
    assert sum(filled) == 1  # bob's own local write only (one push a project)
    rows = bob.store.connection.execute(
        "SELECT id, bucket_key FROM memories WHERE editor = ?", (admin.key.kid,)
    ).fetchall()
    assert len(rows) == 40
    assert all(key == bucket_key(SUITE, mid) for mid, key in rows)


def test_an_update_keeps_the_row_key_and_a_local_write_leaves_it_to_the_push(
    tmp_path: Path,
) -> None:
    store = MemoryStore.open(tmp_path / "store.db", author=ME)
    conn = store.connection
    newer = Provenance("folder", "bob", "bob", True, NOW, 2)
    first = [_version(i, NOW - 10) for i in range(5)]
    with transaction(conn):
        apply_versions(conn, first, newer, NOW)
        assert outgoing.fill_bucket_keys(conn, PROJECT) == 0
        conn.execute("UPDATE memories SET bucket_key = NULL WHERE id = ?", (first[0].id,))
        apply_versions(conn, [_version(i, NOW - 5) for i in range(5)], newer, NOW)
        assert outgoing.fill_bucket_keys(conn, PROJECT) == 1  # an update keeps NULL too
        store.remember("a local note", project=PROJECT)
        assert outgoing.fill_bucket_keys(conn, PROJECT) == 1
    keys = dict(conn.execute("SELECT id, bucket_key FROM memories").fetchall())
    assert keys == {mid: bucket_key(SUITE, mid) for mid in keys}
    store.close()


NOW = 1_800_000_000_000


def _version(i: int, wall: int) -> Record:
    return Record(
        id=new_memory_id(NOW - 1_000 + i, i.to_bytes(10, "big")),
        project=PROJECT,
        kind="note",
        content=f"service {i} caches by lockfile",
        keywords=("cache",),
        importance=0.5,
        author="bob",
        editor="bob",
        created_at=NOW - 1_000,
        hlc=Hlc(wall, i),
    )
