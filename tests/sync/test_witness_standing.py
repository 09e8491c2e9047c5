"""A floor is only as good as its witness: a member that witnesses a seq its writer never
reached freezes that writer's chain (``behind-witness``) for every reader, and revoking
that member is the way out: what a revoked member witnessed is no floor any more.

Real members, real stores, one folder; bob is the hostile member (he holds his signing
and content keys, so his manifest verifies).
"""

from __future__ import annotations

import pytest

from sealmem.client.team import admin
from sealmem.protocol import reasons
from sealmem.protocol.manifest import Head
from tests.sync import forge
from tests.sync.conftest import PROJECT, World

pytestmark = pytest.mark.slow


def test_a_revoked_members_invented_floor_no_longer_freezes_a_writer(world: World) -> None:
    adm, alice, bob, carol = (world.nodes[n] for n in ("admin", "alice", "bob", "carol"))
    alice.remember("alice's note, which carol should read")
    alice.sync()  # alice's seq 1
    bogus = Head(alice.key.kid, PROJECT, 1_000_000, "ab" * 32)
    plain = forge.records_by_bucket(bob, [0], 1, "bob's cover note")
    forge.publish(bob, {0: forge.bucket_plaintext(plain[0])}, records=1, heads=(bogus,))

    summary = carol.sync()  # bob's manifest verifies: its witness is a floor
    refused = [r for r in summary.refused if r.object.startswith(f"manifest {alice.key.kid[:8]}")]
    assert [r.reason for r in refused] == [reasons.BEHIND_WITNESS], summary.refused
    assert bob.key.kid in refused[0].detail
    assert "revoke" in refused[0].detail
    assert carol.written_by(alice) == 0

    admin.revoke(adm.t, "bob", now=adm.clock())
    alice.sync()  # alice publishes under the new epoch, seq 2
    summary = carol.sync()
    assert not [r for r in summary.refused if r.reason == reasons.BEHIND_WITNESS], summary.refused
    assert carol.t.trusted().head(alice.key.kid, PROJECT).seq == 2
    assert carol.written_by(alice) == 1


def test_a_member_citing_a_roster_that_never_existed_is_named_and_revoking_it_unfreezes(
    world: World,
) -> None:
    adm, bob, carol = (world.nodes[n] for n in ("admin", "bob", "carol"))
    world.sync_all(1)
    plain = forge.records_by_bucket(bob, [0], 1, "bob's cover note")
    forge.publish(bob, {0: forge.bucket_plaintext(plain[0])}, records=1, roster_version=999)

    carol.remember("carol's note, held back while frozen")
    summary = carol.sync()
    frozen = [w for w in summary.warnings if w.startswith("frozen:")]
    assert len(frozen) == 1, summary.warnings
    assert summary.pushed_versions == 0
    assert "bob" in frozen[0]  # the member's name, not only a key prefix
    assert "revoke" in frozen[0]  # and the way out

    admin.revoke(adm.t, "bob", now=adm.clock())
    summary = carol.sync()
    assert not [w for w in summary.warnings if w.startswith("frozen:")], summary.warnings
    assert summary.pushed_versions >= 1
