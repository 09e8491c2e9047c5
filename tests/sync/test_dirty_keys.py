"""The dirty-bucket log read back as bucket keys: from the stored column for rows still in the
store, hashed from the id for rows gone since; a full rebuild reads no key at all."""

from __future__ import annotations

from pathlib import Path

from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.sync import outgoing
from sealmem.crypto import SUITE
from sealmem.protocol.snapshot import bucket_key

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
