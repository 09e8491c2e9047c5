"""The BM25 pool checks the scope on its best matches only: it draws the same
candidates as the pool that checked every match, and recall ranks the same."""

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
from sealmem.client.recall.ranking import RankingWeights
from sealmem.client.recall.sql import _COLUMNS, Row, Scope, bm25_pool, narrow_scope

_WORDS = ["orders", "postgres", "cache", "redis", "deploy", "friday", "tokens", "queue"]
_START = 1_767_225_600_000


def _every_match_pool(
    conn: sqlite3.Connection,
    match: str,
    scope: Scope,
    keywords_weight: float,
    limit: int,
    *,
    newest: bool = False,
    narrow: bool = False,
) -> list[tuple[float, Row]]:
    """The pool as it was: the scope inside the ranking, every match's row read
    (``narrow`` or not)."""
    score = "0.0" if newest else "-bm25(memories_fts, 1.0, ?)"
    order = "memories_fts.rowid DESC" if newest else "s DESC"
    sql = (
        f"SELECT p.s, {_COLUMNS} FROM (SELECT m.rowid AS rid, {score} AS s "
        "FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND {scope.sql} ORDER BY {order} LIMIT ?) AS p "
        "JOIN memories m ON m.rowid = p.rid"
    )
    args = [*([] if newest else [keywords_weight]), match, *scope.args, limit]
    cur = conn.cursor()
    cur.row_factory = None
    return [(max(r[0], 1e-9), r[1:]) for r in cur.execute(sql, args)]


@contextmanager
def _store(seed: int) -> Iterator[tuple[MemoryStore, random.Random]]:
    """A store of two projects, most memories in the one not searched, some of them
    forgotten, texts often repeated word for word (equal BM25 scores)."""
    rng = random.Random(seed)
    now = [_START]
    with (
        tempfile.TemporaryDirectory() as tmp,
        MemoryStore.open(Path(tmp) / "store.db", author="ann", clock=lambda: now[0]) as store,
    ):
        texts = [" ".join(rng.choices(_WORDS, k=rng.randint(1, 5))) for _ in range(12)]
        written = []
        for i in range(rng.randint(10, 70)):
            now[0] += 60_000
            project = "app" if rng.random() < 0.3 else "other"
            memory = store.remember(
                rng.choice(texts) + f" n{i}", project=project, origin="cli"
            ).memory
            written.append(memory.id)
        for memory_id in rng.sample(written, len(written) // 6):
            store.forget(memory_id, reason="wrong")
        yield store, rng


def _key(pool: list[tuple[float, Row]]) -> list[tuple[float, Row]]:
    return sorted(pool, key=lambda hit: (-hit[0], hit[1][0]))


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_the_pool_draws_what_the_pool_of_every_match_drew(seed: int) -> None:
    with _store(seed) as (store, rng):
        conn = store.connection
        for _ in range(12):
            match = " OR ".join(f'"{w}"' for w in rng.sample(_WORDS, rng.randint(1, 3)))
            scope = Scope(rng.choice([["app"], ["other"], ["app", "other"], None]), None)
            limit = rng.randint(1, 12)
            for newest, narrow in ((False, False), (False, True), (True, False)):
                got = bm25_pool(conn, match, scope, 2.0, limit, newest=newest, narrow=narrow)
                want = _every_match_pool(conn, match, scope, 2.0, limit, newest=newest)
                assert _key(got) == _key(want)
                assert len(got) == len(want) <= limit


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_recall_ranks_the_same_as_with_the_pool_of_every_match(seed: int) -> None:
    with _store(seed) as (store, rng):
        weights = RankingWeights(pool=rng.randint(2, 30))
        queries = [" ".join(rng.sample(_WORDS, rng.randint(1, 4))) for _ in range(8)]
        now = _START + 86_400_000

        def ranked() -> list[list[tuple[str, float, dict[str, float]]]]:
            out = []
            for query in queries:
                for projects in (["app"], None):
                    hits = search.search(
                        store.connection,
                        query,
                        k=10,
                        projects=projects,
                        include_history=False,
                        kinds=None,
                        now_ms=now,
                        weights=weights,
                    )
                    out.append([(hit.id, hit.score, hit.why) for hit in hits])
            return out

        now_ranked = ranked()
        assert any(now_ranked)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(search, "bm25_pool", _every_match_pool)
            assert ranked() == now_ranked


def test_a_pool_whose_best_matches_are_out_of_scope_asks_again(tmp_path: Path) -> None:
    now = [_START]
    with MemoryStore.open(tmp_path / "s.db", author="ann", clock=lambda: now[0]) as store:
        for i in range(40):  # the best matches are all in "other"
            now[0] += 60_000
            store.remember(f"redis redis redis cache {i}", project="other")
        for i in range(3):
            now[0] += 60_000
            store.remember(f"redis and a long text about other things {i}", project="app")
        pool = bm25_pool(store.connection, '"redis"', Scope(["app"], None), 2.0, 2)
        assert [row[3] for _, row in pool] == ["app", "app"]
        want = _every_match_pool(store.connection, '"redis"', Scope(["app"], None), 2.0, 2)
        assert _key(pool) == _key(want)


def _pool_statements(store: MemoryStore, query: str, project: str) -> list[str]:
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    try:
        assert store.recall(query, project=project)
    finally:
        store.connection.set_trace_callback(None)
    return [sql for sql in statements if "MATCH" in sql and "bm25(memories_fts" in sql]


def test_the_pool_reads_the_rows_of_its_best_matches_only_when_most_are_in_scope(
    tmp_path: Path,
) -> None:
    now = [_START]
    with MemoryStore.open(tmp_path / "s.db", author="ann", clock=lambda: now[0]) as store:
        for i in range(60):
            now[0] += 60_000
            project = "app" if i % 6 else "lib"  # five memories in six are "app"'s
            store.remember(f"redis cache note {i}", project=project)
        assert not narrow_scope(store.connection, ["app", "shared"], None)
        assert narrow_scope(store.connection, ["lib", "shared"], None)
        assert narrow_scope(store.connection, ["app"], ["note"])
        # "app": the index ranks alone, and the rows of its best matches are read after
        (ranked,) = _pool_statements(store, "redis", "app")
        assert "JOIN memories" not in ranked
        # "lib": most matches are out of scope, so the scope is inside the ranking
        (ranked,) = _pool_statements(store, "redis", "lib")
        assert "JOIN memories m ON m.rowid = memories_fts.rowid" in ranked
