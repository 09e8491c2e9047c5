"""Objects damaged in the shared folder (a chunk, a manifest) heal on the writer's next
sync, even when it has nothing new to say; readers then converge."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sync.conftest import PROJECT, Node, World, make_world

from .conftest import converged

pytestmark = pytest.mark.slow


def writer_dir(world: World, node: Node) -> Path:
    team = world.nodes["admin"].t.config.team
    return world.folder / "sealmem" / team / "snapshots" / PROJECT / node.key.kid


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["chunk", "manifest"])
def test_a_damaged_object_heals_on_the_writers_next_sync(tmp_path: Path, damage: str) -> None:
    world = make_world(tmp_path, "alice", "bob")
    try:
        alice, bob = world.nodes["alice"], world.nodes["bob"]
        written = {f"alice's note {i}: the release checklist" for i in range(20)}
        for text in sorted(written):
            alice.remember(text)
        alice.sync()
        where = writer_dir(world, alice)
        if damage == "chunk":
            targets = sorted((where / "chunks").iterdir())
        else:
            targets = sorted(where.glob("manifest-*.json"))[-1:]
        for path in targets:
            flip(path)
        bob.sync()  # refuses what is damaged, keeps going
        alice.sync()  # nothing new to say: the writer heals anyway
        bob.sync()
        converged([alice, bob], written)
        assert bob.sync().refused == []
    finally:
        world.close()
