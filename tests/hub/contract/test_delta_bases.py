"""The hub keeps the full manifest every kept delta is listed against, on every storage
backend (SQLite, PostgreSQL + S3): a revoked writer's pinned delta stays readable after
its writer published a full manifest the admin had not seen."""

from __future__ import annotations

import pytest

from sealmem.crypto import SUITE
from sealmem.hub.storage import Storage
from sealmem.hub.teams import Teams
from sealmem.protocol import canonical
from sealmem.protocol.bases import rebuild
from sealmem.protocol.encoding import object_hash
from sealmem.protocol.manifest import Manifest
from sealmem.protocol.roster import Pin, Revocation
from sealmem.protocol.snapshot import PreviousSnapshot, Snapshot
from tests.protocol.team_world import NOW, PROJECT, TEAM, World, make_record

pytestmark = pytest.mark.slow


def _push(store: Storage, teams: Teams, snap: Snapshot, envelope: bytes) -> bool:
    m = snap.manifest
    for cid, data in snap.new_chunks.items():
        store.put_chunk(TEAM, PROJECT, m.writer, cid, data, NOW)
    return teams.put_manifest(TEAM, PROJECT, m.writer, m.seq, envelope, NOW)


def _full_then_delta(world: World) -> list[tuple[Snapshot, bytes]]:
    """A full manifest of 300 records, then a delta against it, one record changed."""
    records = [make_record(world.alice, i) for i in range(300)]
    full = world.snapshot(world.alice, records)
    records[2] = make_record(world.alice, 2, content="changed at 2")
    snap = world.snapshot(
        world.alice, records, seq=2, prev=full.hash,
        previous=PreviousSnapshot(full.manifest, full.digests),
    )  # fmt: skip
    delta = snap.manifest.against(SUITE, full.manifest, full.hash or "")
    return [(full, full.envelope), (snap, delta.sign(world.alice))]


def test_a_kept_delta_keeps_its_base_after_a_full_manifest(store: Storage) -> None:
    """Full 1, delta 2 against it, full 3: the hub keeps 2 (one of the newest) and so
    its base 1, which a revocation that pins 2 (the admin had not seen 3) needs."""
    world = World()
    teams = Teams(store, manifests_kept=2)
    roster = world.roster_v1()
    teams.publish_roster(
        TEAM, roster.sign(world.root), [world.keyring(roster).sign(world.root)], NOW
    )
    chain = _full_then_delta(world)
    for snap, envelope in chain:
        assert _push(store, teams, snap, envelope)
    delta_body = canonical.decode(chain[1][1])["body"]
    records = [make_record(world.alice, i, content=f"rewritten {i}") for i in range(300)]
    full = world.snapshot(
        world.alice, records, seq=3, prev=object_hash(SUITE, "manifest", delta_body)
    )
    assert _push(store, teams, full, full.envelope)
    kept = store.manifests(TEAM, PROJECT, world.alice.kid)[world.alice.kid]
    assert [canonical.decode(d)["body"]["seq"] for d in kept] == [3, 2, 1]

    pin = Pin(2, object_hash(SUITE, "manifest", delta_body))
    v2 = (
        world.roster_v1()
        .successor(
            SUITE, created_at=NOW + 1, revocations=(Revocation(world.alice.kid, 2, {PROJECT: pin}),)
        )
        .check(SUITE)
    )
    teams.publish_roster(TEAM, v2.sign(world.root), [], NOW + 1)
    kept = store.manifests(TEAM, PROJECT, world.alice.kid)[world.alice.kid]
    assert [canonical.decode(d)["body"]["seq"] for d in kept] == [2, 1]
    base = Manifest.from_body(canonical.decode(kept[1])["body"])
    pinned = Manifest.from_body(delta_body)
    rebuilt = rebuild(SUITE, pinned, [(base, base.hash(SUITE))])
    assert rebuilt.chunks == chain[1][0].manifest.chunks
    store.collect(TEAM, PROJECT, world.alice.kid, set(), NOW + 10**9)
    for ref in rebuilt.chunks:  # none of the pinned snapshot's chunks is collected
        assert store.chunk(TEAM, PROJECT, world.alice.kid, ref.id) is not None
