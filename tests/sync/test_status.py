"""A member learns where it stands: revoked members are told so, status shows sync health."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sealmem.client.team import admin
from tests.sync.conftest import World


def test_a_revoked_member_is_told_and_pushes_nothing(world: World) -> None:
    adm, bob = world.nodes["admin"], world.nodes["bob"]
    admin.revoke(adm.t, "bob", keep_data=False, now=adm.clock())
    bob.remember("written after the revocation")
    summary = bob.sync()
    assert summary.pushed_versions == 0
    assert any("revoked from the team" in w for w in summary.warnings)


@pytest.mark.slow
def test_status_reports_sync_health(world: World) -> None:
    alice = world.nodes["alice"]
    alice.remember("status check memory")
    alice.sync()
    env = {**os.environ, "SEALMEM_HOME": str(alice.home)}
    cli = [sys.executable, "-m", "sealmem.client.cli", "status"]
    doc = json.loads(
        subprocess.run([*cli, "--json"], env=env, capture_output=True, text=True, check=True).stdout
    )
    assert doc["sync"]["configured"] is True
    assert doc["sync"]["transport"] == "folder"
    assert doc["sync"]["last_sync"]["summary"]["pushed_versions"] == 1
    human = subprocess.run(cli, env=env, capture_output=True, text=True, check=True).stdout
    assert "sync: team " in human
    assert "via folder" in human


@pytest.mark.slow
def test_a_sync_stopped_by_a_missing_share_is_recorded_with_its_reason(world: World) -> None:
    import pytest

    from sealmem.client.sync import replica
    from sealmem.protocol.errors import TransportError

    alice = world.nodes["alice"]
    alice.sync()
    (world.folder / "sealmem").rename(world.root / "share-unmounted")
    with pytest.raises(TransportError, match="mounted"):
        alice.sync()
    last = replica.last_run(alice.store.connection)
    assert last is not None
    assert "mounted" in last["summary"]["error"]
    assert list(world.folder.iterdir()) == []
