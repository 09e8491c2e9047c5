"""Over a real hub: dropping a revoked member's versions brings teammates' versions back."""

from __future__ import annotations

import pytest

from sealmem.client.team import admin

from .conftest import BOTH_PATHS, HubWorld, now_ms

pytestmark = [pytest.mark.slow, BOTH_PATHS]


def test_drop_over_the_hub_keeps_what_teammates_wrote(world: HubWorld) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    original = alice.remember("the hub runs behind the reverse proxy", keywords=["hub"])
    world.sync_all(1)
    again = bob.remember("the hub runs behind the reverse proxy", keywords=["proxy"])
    assert again.id == original.id
    only_bob = bob.remember("bob's own note on the proxy timeouts")
    world.sync_all(2)
    assert adm.store.get(original.id).record.editor == bob.key.kid

    admin.revoke(adm.t, "bob", keep_data=False, now=now_ms())
    for node in (adm, alice):
        summary = node.sync()
        assert original.id in node.team_ids()  # never lost
        assert node.store.get(original.id).record == original.record
        assert only_bob.id not in node.team_ids()
        assert summary.refused == []
        assert any("revoked members" in w for w in summary.warnings)
    world.sync_all(1)
    assert adm.store.get(original.id).record == original.record
