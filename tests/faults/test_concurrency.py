"""Syncs that overlap: two of one member at once, and four members syncing one folder
concurrently for a few rounds, as real processes.  All converge, nothing lost or twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sync.conftest import make_world

from .conftest import converged, sound, start

pytestmark = pytest.mark.slow

ROUNDS = 3


def finish(procs: list) -> None:  # type: ignore[type-arg]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, (out, err)
        assert "Traceback" not in err, err
        assert "refused" not in err, err  # no fork, rollback or bad object between them


def test_two_syncs_of_one_member_at_once(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", "bob")
    try:
        alice = world.nodes["alice"]
        written: set[str] = set()
        for n in range(ROUNDS):
            for i in range(3):
                text = f"alice round {n} note {i}: two syncs at once"
                alice.remember(text)
                written.add(text)
            finish([start(alice.home, "sync"), start(alice.home, "sync")])
        sound(node.home for node in world.nodes.values())
        world.sync_all(rounds=2)
        converged(world.nodes.values(), written)
    finally:
        world.close()


def test_four_members_sync_one_folder_concurrently(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", "bob", "carol")
    try:
        members = list(world.nodes.values())
        assert len(members) == 4
        written: set[str] = set()
        for n in range(ROUNDS):
            for node in members:
                text = f"{node.name} round {n}: concurrent syncs of one folder"
                node.remember(text)
                written.add(text)
            finish([start(node.home, "sync") for node in members])
        sound(node.home for node in members)
        world.sync_all(rounds=2)
        converged(members, written)
    finally:
        world.close()
