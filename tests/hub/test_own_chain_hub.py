"""Our own chain read back over a real hub (SPEC "Restore and copied keys"): a home copied
to a second machine is stopped as key-in-use and loses nothing; a store restored from a
backup (alone or with the whole home) gets its later memories back and a late joiner gets
them all; an interrupted push (the process dies once the hub took the manifest) is not
taken for a copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sealmem.client.sync.own_chain import is_adopted
from sealmem.client.sync.session import Team
from tests.sync.machines import close, contents
from tests.sync.own_chain_runs import READ_BACK, alternate, restore_run

from .conftest import PROJECT, HubWorld

pytestmark = pytest.mark.slow


def hub_team(world: HubWorld) -> Any:
    def make(node: Any) -> Team:
        return world._team(node, world.nodes["admin"].key)

    return make


def test_a_copied_home_is_stopped_as_key_in_use_and_nothing_is_lost(
    world: HubWorld, tmp_path: Path
) -> None:
    laptop, bob = world.nodes["alice"], world.nodes["bob"]
    kid = laptop.key.kid

    def chain() -> object:
        transport = bob.t.transport
        return transport.newest_seqs(PROJECT).get(kid), transport.writer_manifests(PROJECT, kid)

    desktop = alternate(laptop, bob, tmp_path, hub_team(world), chain)
    close(desktop)


@pytest.mark.parametrize("whole_home", [False, True], ids=["store-alone", "whole-home"])
def test_a_restored_store_gets_its_later_memories_back(
    world: HubWorld, tmp_path: Path, whole_home: bool
) -> None:
    texts, _ = restore_run(world.nodes["alice"], tmp_path, hub_team(world), whole_home=whole_home)
    (carol,) = world.join("carol")
    carol.sync()
    carol.sync()
    assert set(texts) <= contents(carol, PROJECT)


class Killed(BaseException):
    """The process died right after the hub took the manifest."""


def test_an_interrupted_push_is_not_taken_for_a_copy(world: HubWorld) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    transport = alice.t.transport
    real = transport.push

    def push_then_die(*args: Any) -> None:
        real(*args)
        raise Killed

    for n in range(2):
        alice.remember(f"alice note {n}, pushed by a sync that died")
        transport.push = push_then_die  # type: ignore[method-assign]
        with pytest.raises(Killed):
            alice.sync()
        del transport.push
    alice.remember("alice note after the interrupted pushes")
    assert not [w for w in alice.sync().warnings if READ_BACK in w]
    assert not is_adopted(alice.home)
    assert bob.sync().refused == []
    assert len(contents(bob, PROJECT)) == 3
