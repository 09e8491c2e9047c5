"""Property: for any interleaving of writes, edits, forgets and syncs across a member's two
devices and a teammate over a real folder, every replica converges to the same winners
and holds every memory written (SPEC "What a reader does with devices": each device
pulls its sibling's chain like any writer's)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client.sync.session import Team

from .conftest import PROJECT, Node, make_world
from .device_runs import add_device
from .machines import contents

pytestmark = pytest.mark.slow

WHO = st.sampled_from(["alice", "desktop", "bob"])
OPS = st.lists(
    st.tuples(st.sampled_from(["write", "write", "sync", "sync", "edit", "forget"]), WHO),
    min_size=3,
    max_size=12,
)


def _team(node: Node) -> Team:
    return Team.open(node.home, node.store, node.key)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_two_devices_and_a_teammate_converge_to_the_same_winners(
    ops: list[tuple[str, str]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        world = make_world(root, "alice", "bob")
        try:
            alice, bob = world.nodes["alice"], world.nodes["bob"]
            desktop = world.node("desktop")
            add_device(alice, desktop, world.nodes["admin"], _team)
            seed = alice.remember("seed: the staging database is read-only on Fridays")
            for node in (alice, desktop, bob, alice, desktop, bob):
                node.sync()
            nodes = {"alice": alice, "desktop": desktop, "bob": bob}
            written = {seed.content}
            forgotten: set[str] = set()
            for n, (op, who) in enumerate(ops):
                node = nodes[who]
                if op == "write":
                    text = f"{who} note {n}: the setting {n} is on"
                    node.remember(text)
                    written.add(text)
                elif op == "sync":
                    node.sync()
                elif seed.id in forgotten:
                    continue
                elif op == "edit":
                    node.store.set_importance(seed.id, 0.2 + n / 100)
                elif not node.store.get(seed.id).deleted:
                    node.store.forget(seed.id, reason="no longer true")
                    forgotten.add(seed.id)
            for _ in range(2):
                for node in nodes.values():
                    node.sync()
            assert alice.winners() == desktop.winners() == bob.winners()
            live = written - ({seed.content} if forgotten else set())
            for node in nodes.values():
                assert live <= contents(node, PROJECT)
        finally:
            world.close()
