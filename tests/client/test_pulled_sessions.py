"""Pulled memories keep their writer's session: origin travels in the signed record."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sync.conftest import PROJECT, World, make_world

pytestmark = pytest.mark.slow


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[World]:
    world = make_world(tmp_path, "alice", "bob")
    try:
        yield world
    finally:
        world.close()


def _found(world: World, who: str, query: str) -> list[str]:
    store = world.nodes[who].store
    return [h.memory.record.id for h in store.recall(query, project=PROJECT, k=10)]


@pytest.mark.parametrize("origin", ["claude-code:0b6f1c2e-7d3a", "cli"])
def test_a_teammate_recalls_with_the_writers_session(pair: World, origin: str) -> None:
    alice = pair.nodes["alice"]
    question = alice.remember("which message broker carries the order events?", origin=origin)
    answer = alice.remember("RabbitMQ, three nodes, quorum queues", origin=origin)
    pair.sync_all()
    bob = pair.nodes["bob"].store
    assert bob.get(answer.id).record.origin == origin
    assert _found(pair, "bob", "message broker for order events") == [question.id, answer.id]


def test_the_time_gap_rule_does_not_join_two_writers(pair: World) -> None:
    alice, bob = pair.nodes["alice"], pair.nodes["bob"]
    question = alice.remember("which message broker carries the order events?", origin="cli")
    other = bob.remember("RabbitMQ, three nodes, quorum queues", origin="cli")
    pair.sync_all()
    assert other.id in {m.id for m in pair.nodes["alice"].store.recent(limit=10, project=PROJECT)}
    assert _found(pair, "alice", "message broker for order events") == [question.id]
