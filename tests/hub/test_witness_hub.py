"""Witnessed heads listed against the base (SPEC.md "Witness encoding") through a real hub
on 127.0.0.1: the hub verifies a v3 delta's rebuilt head set against the base it keeps,
and a newcomer takes a head the delta left unchanged as a floor (a hostile double over
the newcomer's own hub client replays an old snapshot).
"""

from __future__ import annotations

import dataclasses

import pytest

from sealmem.client.sync.engine import sync
from sealmem.protocol import canonical, reasons
from sealmem.protocol.manifest import DELTA_FORMAT, MANIFEST_FORMAT
from tests.hub.conftest import PROJECT, HubWorld, Node
from tests.support.withholding import capture, replay

pytestmark = pytest.mark.slow


def _newest_body(node: Node) -> dict:  # type: ignore[type-arg]
    data = node.t.transport.newest_manifest(PROJECT, node.key.kid)
    assert data is not None
    return canonical.decode(data)["body"]  # type: ignore[no-any-return]


def test_a_head_left_unchanged_in_a_delta_is_a_floor_through_the_hub(world: HubWorld) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    note = alice.remember("the staging database password rotates on fridays")
    alice.sync()
    seq1 = capture(alice.t.transport, PROJECT, alice.key.kid)
    alice.store.forget(note.id, reason="a secret does not belong in team memory")
    alice.sync()
    bob.remember("bob's first note")
    bob.sync()
    assert _newest_body(bob)["format"] == MANIFEST_FORMAT  # witnesses alice's seq 2
    bob.remember("bob's second note")
    assert not bob.sync().refused  # the hub accepted the delta, rebuilt from its base
    body = _newest_body(bob)
    assert body["format"] == DELTA_FORMAT
    assert alice.key.kid not in [h["writer"] for h in body["heads_changed"]]

    (dave,) = world.join("dave")
    victim = dataclasses.replace(dave.t, transport=world.transport_for(dave.key))
    try:
        replay(victim.transport, PROJECT, alice.key.kid, *seq1)
        summary = sync(victim)
    finally:
        victim.transport.close()
    refused = [r for r in summary.refused if r.object.startswith(f"manifest {alice.key.kid[:8]}")]
    assert [r.reason for r in refused] == [reasons.BEHIND_WITNESS], summary.refused
    assert bob.key.kid in refused[0].detail
    assert dave.t.trusted().head(alice.key.kid, PROJECT) is None
    assert dave.t.trusted().head(bob.key.kid, PROJECT).seq == body["seq"]
