"""The document counts of frequent terms the store keeps for recall: equal to the
full-text index's after every write path, filled again as the store doubles, read by a
cold recall instead of walking the index, and recall ranks the same with or without
them."""

from __future__ import annotations

import random
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client import MemoryStore
from sealmem.client.recall import search
from sealmem.client.store import derived
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.recover import recover
from sealmem.client.sync.apply import apply_versions
from sealmem.protocol.record import Record
from tests.support.versions import versions

from .conftest import OpenStore

_WORDS = ["orders", "postgres", "cache", "caching", "redis", "deploy", "friday", "tokens", "q1"]
_START = 1_767_225_600_000


def _kept(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT term, docs FROM term_counts"))


def _indexed(conn: sqlite3.Connection) -> dict[str, int]:
    """Every term's document count as the full-text index gives it (walked)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.test_vocab "
        "USING fts5vocab(main, memories_fts, row)"
    )
    return dict(conn.execute("SELECT term, doc FROM temp.test_vocab"))


def _check(conn: sqlite3.Connection) -> dict[str, int]:
    """The kept counts, after checking they are the index's and that recall reads them
    (they have counted every row the store holds)."""
    kept, indexed = _kept(conn), _indexed(conn)
    assert kept == {term: indexed.get(term, 0) for term in kept}
    if kept:
        (counted, memories, rows) = conn.execute(
            "SELECT (SELECT counted FROM term_counts_at), (SELECT memories FROM store_counts), "
            "(SELECT count(*) FROM memories)"
        ).fetchone()
        assert counted == memories == rows
    return kept


@contextmanager
def _frequent_from(docs: int) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(derived, "FREQUENT_DOCS", docs)
        yield


def _text(rng: random.Random) -> str:
    return " ".join(rng.choices(_WORDS, k=rng.randint(1, 5)))


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_the_kept_counts_are_the_index_counts_after_every_write_path(seed: int) -> None:
    rng = random.Random(seed)
    now = [_START]

    def clock() -> int:
        now[0] += 1000
        return now[0]

    with (
        _frequent_from(3),
        tempfile.TemporaryDirectory() as tmp,
        MemoryStore.open(Path(tmp) / "a.db", author="ann", clock=clock) as store,
        MemoryStore.open(Path(tmp) / "b.db", author="bob", clock=clock) as other,
    ):
        conn = store.connection
        live = [store.remember(f"orders {i}").memory.id for i in range(3)]
        seen = set(_check(conn))  # filled at 3 memories
        assert "order" in seen
        for _ in range(rng.randint(5, 40)):
            action = rng.random()
            if action < 0.5 or not live:  # a new memory, or a repeat that reinforces one
                memory_id = store.remember(_text(rng), keywords=rng.sample(_WORDS, 1)).memory.id
                live.extend([memory_id] if memory_id not in live else [])
            elif action < 0.6:
                store.forget(live.pop(rng.randrange(len(live))), reason="wrong")
            elif action < 0.7:  # a correction: a new memory that supersedes an old one
                memory_id = store.remember(_text(rng), supersedes=[rng.choice(live)]).memory.id
                live.extend([memory_id] if memory_id not in live else [])
            elif action < 0.85:  # a batch: new rows and changed ones
                for _ in range(rng.randint(1, 8)):
                    other.remember(_text(rng))
                store.import_(other.export())
            else:
                store.set_importance(rng.choice(live), rng.random())
            seen.update(_check(conn))


def test_the_counts_are_filled_again_each_time_the_store_doubles(open_store: OpenStore) -> None:
    with _frequent_from(4):
        store = open_store(author="ann")
        conn = store.connection
        at = []
        for i in range(17):
            store.remember(f"cache note {i}" + (" redis" if i >= 6 else ""), project="app")
            (memories,) = conn.execute("SELECT memories FROM term_counts_at").fetchone()
            at.append(memories)
        assert at == [0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 16, 16]
        kept = _check(conn)
        assert kept["cach"] == 17  # kept since 4 memories, counted at every write since
        assert kept["redi"] == 11  # frequent by the fill at 16 memories
        assert set(kept) == {"cach", "note", "redi"}  # the numbers are each in one memory


def test_a_cold_recall_reads_a_frequent_count_instead_of_walking_the_index(
    open_store: OpenStore,
) -> None:
    with _frequent_from(5):
        store = open_store(author="ann")
        for i in range(12):
            store.remember(f"the cache of orders {i}", project="app")
        store.remember("redis holds the sessions", project="app")
        path = store.path
        store.close()
        cold = open_store(path, author="ann")
        statements: list[str] = []
        cold.connection.set_trace_callback(statements.append)
        hits = cold.recall("cache redis", project="app")
        cold.connection.set_trace_callback(None)
    assert hits[0].memory.content == "redis holds the sessions"
    walked = [sql for sql in statements if "_vocab" in sql]
    assert walked  # the rare word is counted in the index
    assert not any("'cach'" in sql for sql in walked)  # the frequent one is read
    assert any("term_counts" in sql and "'cach'" in sql for sql in statements)


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_recall_ranks_the_same_with_and_without_the_kept_counts(seed: int) -> None:
    rng = random.Random(seed)
    now = [_START]
    with (
        _frequent_from(2),
        tempfile.TemporaryDirectory() as tmp,
        MemoryStore.open(Path(tmp) / "s.db", author="ann", clock=lambda: now[0]) as store,
    ):
        for i in range(rng.randint(5, 40)):
            now[0] += rng.choice([60_000, 3_600_000 * 5])
            origin = "cli" if i % 3 else f"mcp:s{i // 6}"
            memory = store.remember(_text(rng), keywords=rng.sample(_WORDS, 1), origin=origin)
            if rng.random() < 0.2:  # a replaced version, for include_history
                store.remember(_text(rng), supersedes=[memory.memory.id], origin=origin)
        queries = [" ".join(rng.sample(_WORDS, rng.randint(1, 4))) for _ in range(8)]

        def ranked() -> list[list[tuple[str, float, dict[str, float]]]]:
            out = []
            for query in queries:
                for history in (False, True):
                    hits = search.search(
                        store.connection,
                        query,
                        k=10,
                        projects=None,
                        include_history=history,
                        kinds=None,
                        now_ms=now[0],
                    )
                    out.append([(hit.id, hit.score, hit.why) for hit in hits])
            return out

        assert _kept(store.connection)
        with_counts = ranked()
        assert any(with_counts)
        store.connection.execute("DELETE FROM term_counts")  # every count walked again
        assert ranked() == with_counts


def test_reindex_and_recover_count_the_frequent_terms_again(
    tmp_path: Path, open_store: OpenStore
) -> None:
    with _frequent_from(3):
        path = tmp_path / "s.db"
        store = open_store(path, author="ann")
        for i in range(8):
            store.remember(f"orders queue {i}", project="app")
        conn = store.connection
        right = _check(conn)
        assert right["order"] == 8
        conn.execute("UPDATE term_counts SET docs = docs + 5")  # counts gone wrong somehow
        store.reindex()
        assert _check(conn) == right
        conn.execute("UPDATE term_counts SET docs = 1")
        store.close()
        salvaged = tmp_path / "salvaged.db"
        recover(path, output=salvaged, now_ms=_START + 86_400_000)
        again = open_store(salvaged, author="ann")
        assert _check(again.connection) == right


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pulls=st.lists(st.lists(versions(), min_size=1, max_size=8), min_size=1, max_size=6))
def test_the_kept_counts_follow_pulled_versions(pulls: list[list[Record]]) -> None:
    """A pull writes through the one writer, tombstones included."""
    now = [_START]
    with (
        _frequent_from(2),
        tempfile.TemporaryDirectory() as tmp,
        MemoryStore.open(Path(tmp) / "s.db", author="alice", clock=lambda: now[0]) as store,
    ):
        conn = store.connection
        for i in range(3):
            store.remember(f"use uv {i}", project="proj")
        assert "uv" in _check(conn)
        pulled = Provenance("folder", "bob", "bob", True, _START, 1)
        for records in pulls:
            with transaction(conn):
                apply_versions(conn, records, pulled, _START)
            _check(conn)


def test_rows_a_writer_inserted_without_counting_them_are_never_read_as_counted(
    open_store: OpenStore,
) -> None:
    with _frequent_from(3):
        store = open_store(author="ann")
        for i in range(6):
            store.remember(f"orders queue {i}", project="app")
        conn = store.connection
        assert _check(conn)["order"] == 6
        # another tool's rows, indexed and counted in the row count, not in the terms
        conn.execute(
            "INSERT INTO memories (id, project, kind, content, importance, local_importance, "
            "author, editor, created_at, hlc_wall, hlc_counter, origin, visibility, updated_at, "
            "stems) SELECT id || 'x', project, kind, content, importance, local_importance, "
            "author, editor, created_at, hlc_wall, hlc_counter + 1, origin, visibility, "
            "updated_at, stems FROM memories"
        )
        conn.execute(
            "INSERT INTO memories_fts (rowid, content, keywords) "
            "SELECT rowid, content, keywords FROM memories WHERE id LIKE '%x'"
        )
        conn.execute("UPDATE store_counts SET memories = memories + 6")
        assert _kept(conn)["order"] == 6  # stale: the index holds 12
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        hits = store.recall("orders", k=20, project="app")
        conn.set_trace_callback(None)
    assert len(hits) == 12
    assert any("_vocab" in sql and "'order'" in sql for sql in statements)  # walked
    assert all(hit.why["coverage"] == hits[0].why["coverage"] for hit in hits)
