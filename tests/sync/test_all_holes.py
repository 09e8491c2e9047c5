"""A manifest whose every chunk is a hole: the reader takes the head, keeps every record
it held, merges nothing it cannot read, and is whole again after the writer's next sync.

Real members, real stores, one real folder; every chunk file of carol's second snapshot
is deleted by someone with write access to the share.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.client.sync.engine import SyncSummary
from sealmem.client.sync.session import Team
from sealmem.protocol import reasons
from tests.sync.conftest import PROJECT, Node, World

pytestmark = pytest.mark.slow

FIRST = [f"carol's first-round note {i}" for i in range(30)]
SECOND = [f"carol's second-round note {i}" for i in range(30)]


def _fresh(node: Node) -> SyncSummary:
    node.team = Team.open(node.home, node.store, node.key)
    return node.sync()


def _chunks(world: World, node: Node) -> Path:
    team = world.nodes["admin"].t.config.team
    return world.folder / "sealmem" / team / "snapshots" / PROJECT / node.key.kid / "chunks"


def _contents(node: Node) -> set[str]:
    return {m.content for m in node.memories().values()}


def test_every_chunk_a_hole_keeps_what_was_held_and_heals(world: World) -> None:
    alice, carol = world.nodes["alice"], world.nodes["carol"]
    for note in FIRST:
        carol.remember(note)
    _fresh(carol)
    _fresh(alice)
    assert set(FIRST) <= _contents(alice)
    before = alice.t.trusted().head(carol.key.kid, PROJECT)
    assert before is not None

    for note in SECOND:
        carol.remember(note)
    _fresh(carol)
    for chunk in _chunks(world, carol).iterdir():
        chunk.unlink()

    summary = _fresh(alice)
    assert {r.reason for r in summary.refused} == {reasons.MISSING_CHUNK}, summary.refused
    head = alice.t.trusted().head(carol.key.kid, PROJECT)
    assert head is not None
    assert head.seq > before.seq  # the signed manifest is the head
    assert set(FIRST) <= _contents(alice)  # nothing held was dropped
    assert not set(SECOND) & _contents(alice)

    healing = _fresh(carol)  # the reports (and its own check) name every chunk
    assert healing.pushed_chunks >= 1
    after = _fresh(alice)
    assert after.refused == [], after.refused
    assert set(FIRST) | set(SECOND) <= _contents(alice)
