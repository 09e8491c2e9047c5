"""``sealmem sync`` killed with SIGKILL at random points, over a folder and over a hub:
the next syncs converge, nothing lost, nothing twice, no store taken for damaged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.hub.http.server import BackgroundHub, free_port
from tests.hub.conftest import TEAM, TOKEN, HubWorld, hub_config
from tests.sync.conftest import make_world

from .conftest import converged, kill_after, seeded, sound, start, timed

pytestmark = pytest.mark.slow

ROUNDS = 10


def test_sync_killed_at_random_over_a_folder(tmp_path: Path) -> None:
    rng = seeded(1401)
    world = make_world(tmp_path, "alice", "bob")
    try:
        alice, bob = world.nodes["alice"], world.nodes["bob"]
        alice.remember("alice's first note syncs whole")
        whole = timed(alice.home, "sync")  # to aim the kills inside a run
        written = {"alice's first note syncs whole"}
        killed = 0
        for n in range(ROUNDS):
            for who in (alice, bob):
                text = f"{who.name} fault round {n}: the cache key is v{n}"
                who.remember(text)
                written.add(text)
            victim = (alice, bob)[n % 2]
            killed += kill_after(start(victim.home, "sync"), rng.uniform(0.3, 1.0) * whole)
        assert killed >= 3, "the kills should land mostly inside a sync"
        sound(node.home for node in world.nodes.values())
        world.sync_all(rounds=2)
        converged(world.nodes.values(), written)
    finally:
        world.close()


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[BackgroundHub]:
    with BackgroundHub(hub_config(tmp_path / "hub-data", port=free_port())) as server:
        yield server


def test_sync_killed_at_random_over_a_hub(tmp_path: Path, hub: BackgroundHub) -> None:
    rng = seeded(1402)
    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(homes, hub.url, lambda k: HubTransport(hub.url, TEAM, k, operator_token=TOKEN))
    try:
        world.create()
        alice, bob = world.join("alice", "bob")
        alice.remember("alice's first note syncs whole")
        whole = timed(alice.home, "sync")  # to aim the kills inside a run
        written = {"alice's first note syncs whole"}
        killed = 0
        for n in range(ROUNDS):
            for who in (alice, bob):
                text = f"{who.name} hub fault round {n}: the queue is q{n}"
                who.remember(text)
                written.add(text)
            victim = (alice, bob)[n % 2]
            killed += kill_after(start(victim.home, "sync"), rng.uniform(0.3, 1.0) * whole)
        assert killed >= 3, "the kills should land mostly inside a sync"
        sound(node.home for node in world.nodes.values())
        world.sync_all(rounds=2)
        converged(world.nodes.values(), written)
    finally:
        world.close()
