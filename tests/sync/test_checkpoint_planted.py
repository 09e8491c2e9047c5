"""A file planted in the folder's ``checkpoint/`` does not stop the team.

The newest checkpoint file is the one members read, and an admin's checkpoint used
to conflict with any file of a higher seq: one planted ``checkpoint/9999999999.json``
made every admin's re-signing "another admin signed at the same time" for good, so
members went stale past the team's stop age although their admin synced every day.
An admin that lands the next seq removes the files above it, which no admin signed
after it (each admin signs the seq after the newest one it accepted).
"""

from __future__ import annotations

import pytest

from sealmem.client.sync.engine import sync
from sealmem.client.team import admin
from tests.sync.conftest import DAY_MS, World

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("planted", [b"not a checkpoint", b""])
def test_a_planted_checkpoint_file_does_not_hide_the_admins_fresh_one(
    world: World, planted: bytes
) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    world.sync_all(1)
    admin.checkpoint(adm.t, now=adm.clock(), warn_after_ms=DAY_MS, stop_after_ms=3 * DAY_MS)
    alice.sync()  # alice keeps the admin's checkpoint
    folder = world.folder / "sealmem" / adm.t.config.team / "checkpoint"
    (folder / "9999999999.json").write_bytes(planted)

    summary = sync(adm.t, clock=lambda: adm.clock() + 4 * DAY_MS)  # the admin re-signs
    assert not [w for w in summary.warnings if "another admin" in w], summary.warnings
    assert not (folder / "9999999999.json").exists()

    alice.remember("alice's note while the admin syncs every day")
    summary = sync(alice.t, clock=lambda: alice.clock() + 4 * DAY_MS)
    assert not [w for w in summary.warnings if w.startswith("stale:")], summary.warnings
    assert summary.pushed_versions == 1
    assert not [r for r in summary.refused if r.object == "checkpoint"], summary.refused
