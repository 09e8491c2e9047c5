"""Over a real hub: a member approved after a rotation reads the older epoch at once."""

from __future__ import annotations

import pytest

from sealmem.client.team import admin
from sealmem.protocol.keyring import Keyring
from sealmem.protocol.keyring import peek as peek_keyring

from .conftest import PROJECT, HubWorld, now_ms

pytestmark = pytest.mark.slow


def _keyrings(world: HubWorld, who: str) -> dict[int, Keyring]:
    blobs = world.nodes[who].t.transport.keyrings(PROJECT)
    found = [peek_keyring(b) for b in blobs]
    return {k.epoch: k for k in found}


def test_a_member_approved_on_the_hub_after_a_rotation_reads_the_older_epoch(
    world: HubWorld,
) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    old = alice.remember("the release train leaves on Thursdays")
    alice.sync()
    admin.rotate(adm.t, PROJECT, now=now_ms())
    assert adm.t.roster().projects[PROJECT] == 2
    before = _keyrings(world, "bob")[1]

    (dave,) = world.join("dave")
    stored = _keyrings(world, "bob")  # the hub replaced its epoch 1 row, took it with the roster
    assert stored[1].key_id == before.key_id
    assert stored[1].roster_version == adm.t.roster().version
    assert set(stored[1].wraps) == set(before.wraps) | {dave.key.kid}
    assert dave.key.kid in stored[2].wraps

    first = dave.sync()
    assert first.refused == [], first.to_dict()
    assert old.id in dave.team_ids()
    assert bob.sync().refused == []
    assert bob.t.trusted().keyring(PROJECT, 1) == stored[1]

    roster = admin.revoke(adm.t, "dave", keep_data=False, now=now_ms())
    assert roster.projects[PROJECT] == 3
    (erin,) = world.join("erin")
    assert dave.key.kid not in _keyrings(world, "bob")[1].wraps  # never again for the revoked
    assert erin.sync().refused == []
    assert old.id in erin.team_ids()
