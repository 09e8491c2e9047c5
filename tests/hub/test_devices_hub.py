"""A member's devices over a real hub on 127.0.0.1 (SPEC "Devices and identity"): the hub
files a device join request as a join request, the two devices of alice write in turn
and both end with every memory, a teammate sees each once; the hub refuses a device
writing its sibling's slot (``not-your-slot``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sealmem.client.sync.hub_answers import HubError
from sealmem.client.sync.session import Team
from sealmem.protocol import hubapi
from tests.sync.device_runs import add_device, alternate_devices

from .conftest import PROJECT, HubWorld

pytestmark = pytest.mark.slow


def hub_team(world: HubWorld) -> Any:
    def make(node: Any) -> Team:
        return world._team(node, world.nodes["admin"].key)

    return make


def test_two_devices_of_one_member_over_a_hub(world: HubWorld, tmp_path: Path) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    world.sync_all(1)
    desktop = world.node("desktop")
    add_device(alice, desktop, world.nodes["admin"], hub_team(world))
    desktop.sync()
    counts = alternate_devices(alice, desktop, bob)
    assert counts == {"written": 6, "alice": 6, "desktop": 6, "bob": 6}
    ids = bob.team_ids()
    assert len(ids) == len(set(ids))
    # a device writes only its own slot: the laptop's manifest PUT into the desktop's slot
    laptop_t = alice.t
    seq = laptop_t.transport.newest_seqs(PROJECT)[alice.key.kid]
    manifest = laptop_t.transport.writer_manifests(PROJECT, alice.key.kid)[-1]
    with pytest.raises(HubError) as info:
        laptop_t.transport.push(PROJECT, desktop.key.kid, seq + 100, manifest, {})
    assert info.value.code == hubapi.NOT_YOUR_SLOT
