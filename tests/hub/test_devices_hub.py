"""A member's devices over a real hub on 127.0.0.1 (SPEC "Devices and identity"): the hub
files a device join request as a join request, the two devices of alice write in turn
and both end with every memory, a teammate sees each once; the hub refuses a device
writing its sibling's slot (``not-your-slot``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sealmem.client.clock import now_ms
from sealmem.client.sync.hub_answers import HubError
from sealmem.client.sync.session import Team
from sealmem.client.team.devices import join_device
from sealmem.crypto import SUITE
from sealmem.protocol import hubapi
from sealmem.protocol.device_invite import DeviceInvite, seal_device_invite
from sealmem.protocol.encoding import b64e
from tests.sync.device_runs import add_device, alternate_devices, bad_invite_join

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


def test_the_hub_refuses_a_device_join_whose_invite_is_not_the_members(world: HubWorld) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    world.sync_all(1)
    roster = bob.t.roster()
    forged = DeviceInvite(
        team=world.team, member=alice.key.kid, name="phone", signer_public=bob.key.sign_public,
        root_public=bob.t.config.root_public, root_box_public=bob.t.config.root_box_public,
        location=world.location, transport="hub", roster_version=roster.version,
        roster_hash=roster.hash(SUITE), created_at=now_ms(), expires_at=now_ms() + 3_600_000,
        invite_id=b64e(bytes(16)),
    )  # fmt: skip
    data = seal_device_invite(forged, bob.key)
    phone = world.node("phone")
    with pytest.raises(HubError) as info:
        join_device(phone.home, forged, data, phone.key, now=now_ms())
    assert info.value.code == "signer-mismatch"
    assert not (phone.home / "team.json").exists()  # nothing saved: a retry starts clean
    admin = world.nodes["admin"]
    assert phone.key.kid not in admin.t.transport.requests()


def test_the_hub_refuses_a_device_join_with_a_damaged_invite_by_name(world: HubWorld) -> None:
    from sealmem.client.sync.session import transport_for

    alice = world.nodes["alice"]
    world.sync_all(1)
    phone = world.node("phone")
    data = bad_invite_join(world.team, alice.key.kid, phone.key)
    transport = transport_for(alice.t.config, phone.key)
    try:
        with pytest.raises(HubError) as info:
            transport.post_request(phone.key.kid, data)
    finally:
        transport.close()
    assert info.value.code == "malformed"
