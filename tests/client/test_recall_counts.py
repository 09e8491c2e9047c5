"""The document count recall's term weights use: read from the full-text index's own
totals (what its BM25 uses), never by scanning every memory."""

from __future__ import annotations

import pytest

from sealmem.client import MemoryStore
from sealmem.client.recall.frequencies import _indexed, _varint, document_frequencies
from sealmem.client.store.memory import Provenance
from sealmem.client.store.writer import write_version
from sealmem.protocol.record import new_memory_id

from .conftest import OpenStore


def _encode(value: int) -> bytes:
    """SQLite's varint (the reference for :func:`_varint`)."""
    if value > (1 << 56) - 1:
        head = [(value >> (8 + 7 * i)) & 0x7F | 0x80 for i in range(7, -1, -1)]
        return bytes([*head, value & 0xFF])
    out = [value & 0x7F]
    value >>= 7
    while value:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(reversed(out))


@pytest.mark.parametrize(
    "value", [0, 1, 127, 128, 240, 16_383, 16_384, 100_000, 2**35 + 3, 2**56 - 1, 2**56, 2**63 - 1]
)
def test_varints_read_as_sqlite_writes_them(value: int) -> None:
    assert _varint(_encode(value) + b"\x05\xff") == value


def test_an_empty_totals_record_is_not_a_count() -> None:
    assert _varint(b"") is None
    assert _varint(b"\x81\x80") is None  # cut short


def _total(store: MemoryStore) -> int:
    (n,) = store.connection.execute("SELECT count(*) FROM memories").fetchone()
    return int(n)


def test_the_index_totals_follow_every_write_path(open_store: OpenStore) -> None:
    store = open_store(author="ann")
    ids = [
        store.remember(f"note {i} about caching layers", project="app").memory.id for i in range(20)
    ]
    store.remember("note 3 about caching layers", project="app")  # a merge, same row
    store.forget(ids[0], reason="wrong")  # a tombstone: a row still indexed
    store.set_importance(ids[1], 0.9)
    other = open_store(store.path.with_name("other.db"), author="bob")
    other.remember("bob's own note", project="app")
    other.import_(store.export())  # the batch writer
    other.import_(store.export())  # again: nothing new
    for each in (store, other):
        cur = each.connection.cursor()
        assert _indexed(cur) == _total(each)
    assert _total(other) == 21


def test_a_cold_recall_does_not_scan_the_memories(open_store: OpenStore) -> None:
    store = open_store(author="ann")
    for i in range(30):
        store.remember(f"the deploy script {i} restarts the workers", project="app")
    path = store.path
    store.close()
    cold = MemoryStore.open(path, author="ann")
    statements: list[str] = []
    cold.connection.set_trace_callback(statements.append)
    try:
        assert cold.recall("deploy workers", project="app")
    finally:
        cold.connection.set_trace_callback(None)
        cold.close()
    scans = [s for s in statements if "count(" in s.lower()]
    assert scans == []
    assert any("memories_fts_data" in s for s in statements)


def test_inside_a_write_transaction_the_count_is_the_rows(open_store: OpenStore) -> None:
    store = open_store(author="ann")
    first = store.remember("first note", project="app").memory.id
    conn = store.connection
    conn.execute("BEGIN IMMEDIATE")
    try:
        record = store.get(first).record.evolve(
            id=new_memory_id(2, bytes(10)), content="second note"
        )
        write_version(
            conn,
            record,
            provenance=Provenance.local(),
            local_importance=0.5,
            seen_count=1,
            updated_at=2,
        )
        n_docs, df, _ = document_frequencies(conn, ["note"], False)
        assert n_docs == 2
        assert df["note"] == 2
    finally:
        conn.execute("ROLLBACK")
