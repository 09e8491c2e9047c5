"""Members whose clocks are a day ahead and a day behind (an injected clock) edit and
forget each other's memories: everyone converges on the same winners, nothing is lost,
and the skewed members are told at sync, once teammates' signed clocks agree with the
folder's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sync.conftest import DAY_MS, make_world

from .conftest import converged

pytestmark = pytest.mark.slow


def test_members_a_day_apart_converge_and_are_told(tmp_path: Path) -> None:
    world = make_world(
        tmp_path, "ahead", "behind", "right", offsets={"ahead": DAY_MS, "behind": -DAY_MS}
    )
    try:
        ahead, behind, right = (world.nodes[n] for n in ("ahead", "behind", "right"))
        written: set[str] = set()
        gone: set[str] = set()
        ids = {}
        for node in (ahead, behind, right):
            for i in range(3):
                text = f"{node.name} note {i}: the on-call rotation"
                ids[text] = node.remember(text).id
                written.add(text)
        for node in world.nodes.values():
            node.sync()  # each publishes: the next round pulls every teammate's signed clock
        warned = {}
        for node in world.nodes.values():
            warned[node.name] = [w for w in node.sync().warnings if "your clock" in w]
        assert "1 day ahead" in warned["ahead"][0]
        assert "1 day behind" in warned["behind"][0]
        assert warned["right"] == []
        world.sync_all(rounds=1)
        # Each edits a memory of the next one's, and forgets one of its own.
        for node, other in ((ahead, behind), (behind, right), (right, ahead)):
            target = ids[f"{other.name} note 0: the on-call rotation"]
            node.store.remember(
                f"{node.name} corrects {other.name}", project="webapp", supersedes=[target]
            )
            written.add(f"{node.name} corrects {other.name}")
            node.store.forget(ids[f"{node.name} note 2: the on-call rotation"], reason="stale")
            written.discard(f"{node.name} note 2: the on-call rotation")
            gone.add(f"{node.name} note 2: the on-call rotation")
        world.sync_all(rounds=3)
        converged(world.nodes.values(), written, gone)
    finally:
        world.close()
