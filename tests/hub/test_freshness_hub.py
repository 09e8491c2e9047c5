"""A hub that withholds or replays is caught: real members, a real hub on 127.0.0.1, and
a hostile double over each victim's own hub client (it can only drop or replay answers).

The same two attacks as tests/sync/test_freshness.py over a folder: a withheld
revocation stops the member's publishing at once (the admin's verified manifest and
the hub's checkpoint cite the roster she is not given), and a newcomer refuses a seq-1
replay that bob's signed manifest witnessed past.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pytest

from sealmem.client.sync.engine import sync
from sealmem.client.sync.hub_answers import HubError
from sealmem.client.sync.session import Team, sync_health
from sealmem.client.team import admin
from sealmem.crypto import SUITE
from sealmem.protocol import canonical, reasons
from sealmem.protocol.checkpoint import Checkpoint, build_checkpoint
from tests.hub.conftest import BOTH_PATHS, PROJECT, HubWorld, Node, now_ms
from tests.support.malicious import flip_signature
from tests.support.withholding import capture, replay, withhold_rosters

pytestmark = [pytest.mark.slow, BOTH_PATHS]


@pytest.fixture
def hostile(world: HubWorld) -> Iterator[Callable[[Node], Team]]:
    """``hostile(node)``: ``node``'s team session over a hub client of its own (closed)."""
    made: list[Team] = []

    def make(node: Node) -> Team:
        made.append(dataclasses.replace(node.t, transport=world.transport_for(node.key)))
        return made[-1]

    yield make
    for team in made:
        team.transport.close()


def test_a_withheld_revocation_stops_publishing_through_the_hub(
    world: HubWorld, hostile: Callable[[Node], Team]
) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    world.join("carol")
    alice.remember("alice's first note")
    world.sync_all(2)
    trusted = alice.t.roster().version
    assert alice.t.transport.checkpoint() is not None  # the admin's syncs signed one
    victim = hostile(alice)
    withhold_rosters(victim.transport, trusted)

    admin.revoke(adm.t, "carol", now=now_ms())
    adm.remember("the admin's note after revoking carol")
    adm.sync()

    before = alice.t.transport.newest_seqs(PROJECT)
    alice.remember("alice's note after the revocation, carol must not read it")
    summary = sync(victim)
    assert summary.pushed_versions == 0
    assert alice.t.transport.newest_seqs(PROJECT) == before
    frozen = [w for w in summary.warnings if w.startswith("frozen:")]
    assert len(frozen) == 1, summary.warnings
    assert f"roster v{trusted + 1}" in frozen[0]
    alarms = sync_health(alice.home, alice.store.connection)["alarms"]
    assert any(a.startswith("frozen:") for a in alarms)

    summary = alice.sync()  # the honest hub: the roster arrives, alice publishes
    assert summary.pushed_versions >= 1, summary.warnings


def test_a_newcomer_refuses_a_replayed_snapshot_from_the_hub(
    world: HubWorld, hostile: Callable[[Node], Team]
) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    note = alice.remember("the staging database password rotates on fridays")
    alice.sync()
    seq1 = capture(alice.t.transport, PROJECT, alice.key.kid)
    alice.store.forget(note.id, reason="a secret does not belong in team memory")
    alice.sync()
    bob.remember("bob's note, which makes bob publish again")
    bob.sync()
    (dave,) = world.join("dave")
    victim = hostile(dave)
    replay(victim.transport, PROJECT, alice.key.kid, *seq1)

    summary = sync(victim)
    refused = [r for r in summary.refused if r.object.startswith(f"manifest {alice.key.kid[:8]}")]
    assert [r.reason for r in refused] == [reasons.BEHIND_WITNESS], summary.refused
    conn = dave.store.connection
    for table, column in (("memories", "content"), ("history", "record_json")):
        sql = f"SELECT COUNT(*) FROM {table} WHERE {column} LIKE '%staging database%'"
        assert conn.execute(sql).fetchone()[0] == 0
    assert dave.t.trusted().head(alice.key.kid, PROJECT) is None


def test_the_hub_keeps_one_verified_checkpoint_per_team(world: HubWorld) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    world.sync_all(1)  # the admin's sync signed the first checkpoint
    held = alice.t.transport.checkpoint()
    assert held is not None
    seq = Checkpoint.from_body(canonical.decode(held)["body"]).seq
    fresh = build_checkpoint(SUITE, adm.t.trusted(), seq=seq + 1, now_ms=now_ms())
    signed = fresh.sign(adm.key)

    def refused(node: Node, at: int, data: bytes) -> tuple[int, str]:
        with pytest.raises(HubError) as info:
            node.t.transport.put_checkpoint(at, data)
        return info.value.status, info.value.code

    assert refused(alice, seq + 1, signed) == (403, "not-admin")  # a member may not publish
    assert refused(adm, seq + 1, fresh.sign(alice.key)) == (403, "not-admin")  # nor sign
    assert refused(adm, seq + 2, signed) == (400, "bad-request")  # the path's seq is not it
    assert refused(adm, seq + 1, b"{not json")[0] in (400, 422)
    assert refused(adm, seq + 1, flip_signature(signed)) == (422, "bad-signature")
    assert alice.t.transport.checkpoint() == held  # nothing refused was kept

    adm.t.transport.put_checkpoint(seq + 1, signed)
    assert alice.t.transport.checkpoint() == signed
    assert refused(adm, seq + 1, signed) == (409, "rollback")  # compare-and-swap on seq
    older = build_checkpoint(SUITE, adm.t.trusted(), seq=seq, now_ms=now_ms()).sign(adm.key)
    assert refused(adm, seq, older) == (409, "rollback")
    assert alice.t.transport.checkpoint() == signed
