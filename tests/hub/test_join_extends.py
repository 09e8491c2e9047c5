"""Over a real hub: approving a reader re-publishes the current keyring, no new epoch."""

from __future__ import annotations

import pytest

from sealmem.client.team import admin
from sealmem.protocol.keyring import Keyring
from sealmem.protocol.keyring import peek as peek_keyring

from .conftest import PROJECT, HubWorld, now_ms

pytestmark = pytest.mark.slow


def _keyrings(world: HubWorld, who: str) -> list[Keyring]:
    blobs = world.nodes[who].t.transport.keyrings(PROJECT)
    return [peek_keyring(b) for b in blobs]


def test_a_member_approved_on_the_hub_reads_existing_data_after_one_sync(
    world: HubWorld,
) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember("the on-call phone forwards to the rota sheet")
    alice.sync()
    bob.sync()
    epoch = adm.t.roster().projects[PROJECT]
    (before,) = _keyrings(world, "bob")

    (dave,) = world.join("dave")
    assert adm.t.roster().projects[PROJECT] == epoch
    (stored,) = _keyrings(world, "bob")  # the hub replaced its row for this epoch
    assert (stored.epoch, stored.key_id) == (epoch, before.key_id)
    assert stored.roster_version == adm.t.roster().version
    assert dave.key.kid in stored.wraps

    first = dave.sync()
    assert first.refused == [], first.to_dict()
    assert mem.id in dave.team_ids()
    assert bob.sync().refused == []
    assert bob.t.trusted().keyring(PROJECT, epoch) == stored

    roster = admin.revoke(adm.t, "dave", keep_data=False, now=now_ms())
    assert roster.projects[PROJECT] == epoch + 1
    later = alice.remember("written after dave left")
    alice.sync()
    dave.sync()
    assert later.id not in dave.team_ids()
    assert dave.t.content_key(dave.t.trusted(), PROJECT, epoch + 1) is None
