"""``recover`` computes again the columns a memory's other columns determine (its
stems, its bucket key) instead of copying them from the damaged file: a garbled one
must neither lose the memory nor live on in the salvaged store."""

from __future__ import annotations

from pathlib import Path

from sealmem.client import MemoryStore
from sealmem.client.store.recover import recover
from sealmem.client.store.rows import norm_hash
from sealmem.client.store.terms import stored_stems

NOW = 1_800_000_000_000


def test_a_garbled_derived_column_neither_loses_the_memory_nor_survives(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with MemoryStore.open(path, author="ann") as store:
        quoted = store.remember("deploy the orders service").memory.id
        other = store.remember("another note about caches").memory.id
        keyed = store.remember("the bucket of this one is garbled").memory.id
        conn = store.connection
        # what a damaged page can hold: a stem list that is no list, a wrong key
        conn.execute("UPDATE memories SET stems = ? WHERE id = ?", ('deploi "x\\', quoted))
        conn.execute("UPDATE memories SET stems = ? WHERE id = ?", ("zzz", other))
        conn.execute("UPDATE memories SET bucket_key = ? WHERE id = ?", (7, keyed))
    result = recover(path, output=tmp_path / "salvaged.db", now_ms=NOW)
    assert result.lost["memories"] == 0
    with MemoryStore.open(tmp_path / "salvaged.db", author="ann") as salvaged:
        rows = salvaged.connection.execute(
            "SELECT id, content, keywords, stems, bucket_key FROM memories"
        ).fetchall()
        assert {row[0] for row in rows} == {quoted, other, keyed}
        for _, content, keywords, stems, key in rows:
            assert stems == stored_stems(content, keywords)
            assert key is None  # the next push fills it from the id
        assert salvaged.recall("orders service")[0].memory.id == quoted
        salvaged.forget(quoted, reason="wrong")  # the term counts read the stems
        assert quoted not in {hit.memory.id for hit in salvaged.recall("orders service")}


def test_a_garbled_dedup_hash_is_computed_again(tmp_path: Path) -> None:
    """``norm_hash`` is the text's de-duplication key: copied garbled, the same text
    remembered again after a salvage would be stored twice instead of merged."""
    path = tmp_path / "store.db"
    with MemoryStore.open(path, author="ann") as store:
        kept = store.remember("Rotate the staging keys every Monday").memory.id
        gone = store.remember("a note that is forgotten").memory.id
        store.forget(gone, reason="obsolete")
        conn = store.connection
        conn.execute("UPDATE memories SET norm_hash = ? WHERE id = ?", ("garbled", kept))
        conn.execute("UPDATE memories SET norm_hash = ? WHERE id = ?", ("garbled-2", gone))
    result = recover(path, output=tmp_path / "salvaged.db", now_ms=NOW)
    assert result.lost["memories"] == 0
    with MemoryStore.open(tmp_path / "salvaged.db", author="ann") as salvaged:
        hashes = dict(salvaged.connection.execute("SELECT id, norm_hash FROM memories"))
        assert hashes[kept] == norm_hash("Rotate the staging keys every Monday")
        assert hashes[gone] is None  # a tombstone has none, as a write leaves it
        again = salvaged.remember("rotate the staging keys   every monday").memory.id
        assert again == kept  # merged with the salvaged memory, not stored twice
