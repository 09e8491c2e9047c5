"""Over a real hub: a member that witnesses a seq its writer never reached freezes that
writer for every reader (``behind-witness``), and revoking the member undoes it.  The
same attack as tests/sync/test_witness_standing.py over a folder."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sealmem.client.sync.session import Team
from sealmem.client.team import admin
from sealmem.crypto import MemberKey
from sealmem.protocol import reasons
from sealmem.protocol.manifest import Head
from tests.hub.conftest import BOTH_PATHS, PROJECT, HubWorld, Node, now_ms
from tests.sync import forge

pytestmark = [pytest.mark.slow, BOTH_PATHS]


@dataclass
class _Forger:
    node: Node

    @property
    def key(self) -> MemberKey:
        return self.node.key

    @property
    def t(self) -> Team:
        return self.node.t

    def clock(self) -> int:
        return now_ms()


def _written_by(node: Node, writer: Node) -> int:
    (n,) = node.store.connection.execute(
        "SELECT COUNT(*) FROM memories WHERE editor = ?", (writer.key.kid,)
    ).fetchone()
    return int(n)


def test_a_revoked_members_invented_floor_no_longer_freezes_a_writer(world: HubWorld) -> None:
    adm, alice, bob = (world.nodes[n] for n in ("admin", "alice", "bob"))
    (carol,) = world.join("carol")
    alice.remember("alice's note, which carol should read")
    alice.sync()
    bogus = Head(alice.key.kid, PROJECT, 1_000_000, "ab" * 32)
    forger = _Forger(bob)
    plain = forge.records_by_bucket(forger, [0], 1, "bob's cover note")
    forge.publish(forger, {0: forge.bucket_plaintext(plain[0])}, records=1, heads=(bogus,))

    summary = carol.sync()
    refused = [r for r in summary.refused if r.object.startswith(f"manifest {alice.key.kid[:8]}")]
    assert [r.reason for r in refused] == [reasons.BEHIND_WITNESS], summary.refused
    assert _written_by(carol, alice) == 0

    admin.revoke(adm.t, "bob", now=now_ms())
    alice.sync()
    summary = carol.sync()
    assert not [r for r in summary.refused if r.reason == reasons.BEHIND_WITNESS], summary.refused
    assert _written_by(carol, alice) == 1
