"""stats() and doctor()."""

from __future__ import annotations

import os
import sqlite3

import pytest

from sealmem.client import MemoryStore


def test_stats_counts(store: MemoryStore) -> None:
    store.remember("one", kind="fact", project="a")
    store.remember("two", kind="fact", project="b", private=True)
    gone = store.remember("three", kind="warning", project="a").memory
    store.forget(gone.id, reason="no")  # its history is purged
    store.remember("one", kind="fact", project="a", keywords=["again"])  # a new version
    stats = store.stats()
    assert stats["memories"] == 2
    assert stats["private"] == 1
    assert stats["tombstones"] == 1
    assert stats["history_versions"] == 1
    assert stats["by_kind"] == {"fact": 2}
    assert stats["by_project"] == {"a": 1, "b": 1}
    assert stats["db_bytes"] > 0
    assert stats["schema_version"] >= 1
    assert stats["author"] == store.author


def test_doctor_all_green_on_a_fresh_store(store: MemoryStore) -> None:
    store.remember("healthy")
    checks = {c.name: c for c in store.doctor()}
    assert set(checks) >= {"integrity", "fts", "wal", "schema", "file_modes"}
    assert all(c.ok for c in checks.values()), [c for c in checks.values() if not c.ok]


def test_doctor_reports_loose_modes(store: MemoryStore) -> None:
    os.chmod(store.path, 0o644)
    check = next(c for c in store.doctor() if c.name == "file_modes")
    assert not check.ok
    assert "chmod 600" in check.detail


def test_doctor_reports_a_broken_fts_index(store: MemoryStore) -> None:
    memory = store.remember("indexed words here").memory
    conn = sqlite3.connect(store.path)
    conn.execute("UPDATE memories SET content = 'other text' WHERE id = ?", (memory.id,))
    conn.commit()
    conn.close()
    check = next(c for c in store.doctor() if c.name == "fts")
    assert not check.ok
    assert "rebuild" in check.detail


def test_reindex_mends_a_damaged_history_index(store: MemoryStore) -> None:
    """``reindex`` builds the history index anew, whatever its pages hold: deleting its
    rows one by one reads the damaged index and leaves it damaged."""
    for i in range(30):
        store.remember(f"step {i} of the deploy pipeline", project="p")
        store.remember(f"step {i} of the deploy pipeline", project="p", kind="decision")
    conn = store.connection
    check = "INSERT INTO history_fts (history_fts, rank) VALUES ('integrity-check', 1)"
    conn.execute("UPDATE history_fts_data SET block = zeroblob(length(block)) WHERE id > 10")
    with pytest.raises(sqlite3.DatabaseError):
        conn.execute(check)
    assert store.reindex() == {"memories": 30, "history": 30}
    conn.execute(check)  # sound again
    hits = conn.execute("SELECT count(*) FROM history_fts WHERE history_fts MATCH 'deploy'")
    assert hits.fetchone()[0] == 30


@pytest.mark.parametrize(
    "planted",
    [
        "UPDATE own_counts SET live = live - 1",  # a pair counted wrong
        "INSERT INTO own_counts (project, editor, rows, live) VALUES ('p', 'bob', 3, 3)",
    ],
    ids=["wrong", "phantom"],
)
def test_doctor_finds_team_counts_out_of_step_either_way(store: MemoryStore, planted: str) -> None:
    """A pair the counts hold and the table does not (another tool deleted its rows)
    answers for teammates that have none: as out of step as a pair counted wrong."""
    store.remember("a team memory", project="p")
    conn = store.connection
    conn.execute(planted)
    check = next(c for c in store.doctor() if c.name == "derived")
    assert not check.ok
    assert "sealmem reindex" in check.detail
    store.reindex()
    assert next(c for c in store.doctor() if c.name == "derived").ok
