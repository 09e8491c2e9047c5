"""Property: for any interleaving of writes, syncs and restores of ``store.db`` from
earlier backups, across a member and a teammate over a real folder, both replicas
converge to the same winners and nothing that left its machine is lost."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sealmem.client.sync.engine import sync
from sealmem.client.sync.own_chain import KeyInUse
from sealmem.client.sync.session import Team

from .conftest import PROJECT, Node, make_world
from .machines import backup, contents, restore_store

pytestmark = pytest.mark.slow

OPS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["write", "sync"]), st.sampled_from(["alice", "bob"])),
        st.just(("backup", "alice")),
        st.tuples(st.just("restore"), st.integers(0, 3)),
    ),
    min_size=3,
    max_size=10,
)


def _team(node: Node) -> Team:
    return Team.open(node.home, node.store, node.key)


def _sync(node: Node, published: set[str]) -> None:
    """A sync; a person who knows no other machine holds the key confirms a second restore."""
    try:
        node.sync()
    except KeyInUse:
        sync(node.t, clock=node.clock, adopt=True)
    published |= contents(node, PROJECT)  # what this store holds has left it now


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
@example(ops=[("backup", "alice"), ("write", "alice"), ("sync", "alice"), ("restore", 0)])
def test_restores_and_syncs_in_any_order_converge_and_lose_nothing_published(
    ops: list[tuple[str, object]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        world = make_world(root, "alice", "bob")
        try:
            alice, bob = world.nodes["alice"], world.nodes["bob"]
            nodes = {"alice": alice, "bob": bob}
            published: set[str] = set()
            backups: list[Path] = []
            for n, (op, arg) in enumerate(ops):
                if op == "write":
                    nodes[str(arg)].remember(f"{arg} note {n}: the setting {n} is on")
                elif op == "sync":
                    _sync(nodes[str(arg)], published)
                elif op == "backup":
                    backups.append(backup(alice, root / f"backup-{n}"))
                elif backups:
                    restore_store(alice, backups[int(str(arg)) % len(backups)], _team)
            for _ in range(2):
                _sync(alice, published)
                _sync(bob, published)
            assert alice.winners() == bob.winners()
            for node in (alice, bob):
                assert published <= contents(node, PROJECT)
        finally:
            world.close()
