"""Sessions in recall: memories written without a session id form one by a time-gap rule.

Real stores (a SQLite file in tmp_path), two authors writing to the same file
through their own ``MemoryStore``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.recall.ranking import RankingWeights
from sealmem.client.recall.search import search

from .conftest import FakeClock

MINUTE_MS = 60_000
GAP_MS = RankingWeights().session_gap_ms


@pytest.fixture
def stores(tmp_path: Path, clock: FakeClock) -> Iterator[tuple[MemoryStore, MemoryStore]]:
    ana = MemoryStore.open(tmp_path / "store.db", author="ana", clock=clock)
    ben = MemoryStore.open(tmp_path / "store.db", author="ben", clock=clock)
    yield ana, ben
    ben.close()
    ana.close()


def _write(store: MemoryStore, text: str, origin: str) -> str:
    return store.remember(text, project="app", origin=origin).memory.record.id


def _found(store: MemoryStore, query: str) -> list[str]:
    return [h.memory.record.id for h in store.recall(query, project="app", k=10)]


@pytest.mark.parametrize("origin", ["cli", "mcp", "api", "import", "claude-code"])
def test_memories_written_close_together_without_a_session_id_are_one_session(
    stores: tuple[MemoryStore, MemoryStore], clock: FakeClock, origin: str
) -> None:
    ana, _ = stores
    question = _write(ana, "which message broker carries the order events?", origin)
    clock.advance(5 * MINUTE_MS)
    answer = _write(ana, "RabbitMQ, three nodes, quorum queues", origin)
    hits = ana.recall("message broker for order events", project="app", k=10)
    assert [h.memory.record.id for h in hits] == [question, answer]
    assert hits[1].why["bm25"] == 0
    assert hits[1].why["context"] > 0


def test_the_time_gap_rule_does_not_link_other_authors(
    stores: tuple[MemoryStore, MemoryStore], clock: FakeClock
) -> None:
    ana, ben = stores
    question = _write(ana, "which message broker carries the order events?", "cli")
    clock.advance(MINUTE_MS)
    other = _write(ben, "RabbitMQ, three nodes, quorum queues", "cli")
    clock.advance(MINUTE_MS)
    own = _write(ana, "Kafka was rejected: too heavy for us", "cli")
    assert _found(ana, "message broker for order events") == [question, own]
    assert other not in _found(ben, "message broker for order events")


def test_the_time_gap_rule_does_not_link_memories_further_apart_than_the_gap(
    stores: tuple[MemoryStore, MemoryStore], clock: FakeClock
) -> None:
    ana, _ = stores
    question = _write(ana, "which message broker carries the order events?", "cli")
    clock.advance(GAP_MS - MINUTE_MS)
    near = _write(ana, "RabbitMQ, three nodes, quorum queues", "cli")
    clock.advance(GAP_MS + MINUTE_MS)
    far = _write(ana, "lunch is at noon on Fridays", "cli")
    found = _found(ana, "message broker for order events")
    assert found == [question, near]
    assert far not in found


def test_a_session_id_wins_over_the_time_gap_rule(
    stores: tuple[MemoryStore, MemoryStore], clock: FakeClock
) -> None:
    ana, _ = stores
    question = _write(ana, "which message broker carries the order events?", "cli:task-1")
    clock.advance(MINUTE_MS)
    _write(ana, "the office plants need water", "cli:task-2")
    clock.advance(MINUTE_MS)
    answer = _write(ana, "RabbitMQ, three nodes, quorum queues", "cli:task-1")
    assert _found(ana, "message broker for order events") == [question, answer]


def test_a_zero_gap_switches_the_rule_off(
    stores: tuple[MemoryStore, MemoryStore], clock: FakeClock
) -> None:
    ana, _ = stores
    question = _write(ana, "which message broker carries the order events?", "cli")
    clock.advance(MINUTE_MS)
    _write(ana, "RabbitMQ, three nodes, quorum queues", "cli")
    weights = RankingWeights(session_gap_ms=0)
    found = search(
        ana.connection, "message broker for order events", k=10, projects=["app"],
        include_history=False, kinds=None, now_ms=clock.now, weights=weights,
    )  # fmt: skip
    assert [s.id for s in found] == [question]
