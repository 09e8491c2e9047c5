"""Delta manifests through the hub: it stores a delta only while it holds the base the
delta names (``missing-base`` otherwise, nothing stored), checks the changed chunks only,
keeps the base alive while the newest manifest names it, and never collects a chunk of the
rebuilt list; members sync through a real hub with deltas, a late joiner included."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.identity import load_member_key
from sealmem.client.sync.session import Team, TeamConfig
from sealmem.crypto import SUITE
from sealmem.hub.errors import Refusal
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.hub.teams import Teams
from sealmem.protocol import canonical, reasons
from sealmem.protocol.encoding import object_hash
from sealmem.protocol.manifest import DELTA_FORMAT, MANIFEST_FORMAT, Head
from sealmem.protocol.roster import Pin, Revocation
from sealmem.protocol.snapshot import PreviousSnapshot, Snapshot
from tests.protocol.team_world import NOW, PROJECT, TEAM, World, make_record

from .conftest import HubWorld, Node


@pytest.fixture
def teams_hub(tmp_path: Path) -> Iterator[tuple[World, SQLiteStorage, Teams]]:
    world = World()
    store = SQLiteStorage(tmp_path / "hub")
    teams = Teams(store, manifests_kept=2)
    roster = world.roster_v1()
    keyring = world.keyring(roster).sign(world.root)
    teams.publish_roster(TEAM, roster.sign(world.root), [keyring], NOW)
    yield world, store, teams
    store.close()


def _push(store: SQLiteStorage, teams: Teams, snap: Snapshot, envelope: bytes) -> bool:
    m = snap.manifest
    for cid, data in snap.new_chunks.items():
        store.put_chunk(TEAM, PROJECT, m.writer, cid, data, NOW)
    return teams.put_manifest(TEAM, PROJECT, m.writer, m.seq, envelope, NOW)


def _chain(world: World, length: int) -> list[tuple[Snapshot, bytes]]:
    """A full manifest of 300 records, then deltas against it, one record changed each."""
    records = [make_record(world.alice, i) for i in range(300)]
    full = world.snapshot(world.alice, records)
    out = [(full, full.envelope)]
    published = full.hash
    for seq in range(2, length + 1):
        prev, _ = out[-1]
        records[seq] = make_record(world.alice, seq, content=f"changed at {seq}")
        snap = world.snapshot(
            world.alice, records, seq=seq, prev=published,
            previous=PreviousSnapshot(prev.manifest, prev.digests),
        )  # fmt: skip
        delta = snap.manifest.against(SUITE, full.manifest, full.hash or "")
        published = delta.hash(SUITE)
        out.append((snap, delta.sign(world.alice)))
    return out


def test_the_hub_keeps_the_base_of_the_newest_delta(
    teams_hub: tuple[World, SQLiteStorage, Teams],
) -> None:
    world, store, teams = teams_hub
    chain = _chain(world, 5)
    for snap, envelope in chain:
        assert _push(store, teams, snap, envelope)
    kept = store.manifests(TEAM, PROJECT, world.alice.kid)[world.alice.kid]
    formats = [canonical.decode(d)["body"]["format"] for d in kept]
    assert formats == [DELTA_FORMAT, DELTA_FORMAT, MANIFEST_FORMAT]  # 2 newest + the base
    # every chunk of the newest rebuilt list is named by a kept manifest: never collected
    newest = chain[-1][0].manifest
    named = teams.kept_chunks(TEAM, PROJECT, world.alice.kid)
    assert {c.id for c in newest.chunks} <= named
    store.collect(TEAM, PROJECT, world.alice.kid, set(), NOW + 10**9)  # whatever their age
    for ref in (*newest.chunks, *chain[0][0].manifest.chunks):  # the base's too: it is kept
        assert store.chunk(TEAM, PROJECT, world.alice.kid, ref.id) is not None


def test_a_delta_whose_base_the_hub_lacks_is_refused_by_name(
    teams_hub: tuple[World, SQLiteStorage, Teams],
) -> None:
    world, store, teams = teams_hub
    (full, _), (second, delta) = _chain(world, 2)
    with pytest.raises(Refusal) as caught:  # nor its changed chunk: the base comes first,
        teams.put_manifest(TEAM, PROJECT, world.alice.kid, 2, delta, NOW)  # (its heads)
    assert caught.value.code == reasons.MISSING_BASE
    with pytest.raises(Refusal) as caught:
        _push(store, teams, second, delta)  # the base (seq 1) was never pushed
    assert caught.value.code == reasons.MISSING_BASE
    assert store.manifests(TEAM, PROJECT) == {}
    assert _push(store, teams, full, full.envelope)
    assert _push(store, teams, second, delta)


@pytest.mark.slow
def test_members_sync_through_the_hub_with_deltas(world: HubWorld) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    for i in range(300):
        alice.remember(f"decision number {i} about the build")
    alice.sync()
    bob.sync()
    for i in range(4):
        alice.remember(f"change {i}")
        alice.sync()
        assert not bob.sync().refused
    kid = alice.key.kid
    kept = bob.t.transport.writer_manifests(PROJECT, kid)
    formats = [canonical.decode(d)["body"]["format"] for d in kept]
    assert formats == [DELTA_FORMAT] * 3 + [MANIFEST_FORMAT]  # 3 newest + the base
    assert len(kept[0]) * 3 < len(kept[-1])
    (carol,) = world.join("carol")  # never saw the base: rebuilds from the hub's copy
    assert not carol.sync().refused
    for node in (bob, carol):
        n = node.store.connection.execute(
            "SELECT COUNT(*) FROM memories WHERE editor = ?", (kid,)
        ).fetchone()[0]
        assert n == 304


def test_a_revoked_writer_s_pinned_delta_keeps_its_base(
    teams_hub: tuple[World, SQLiteStorage, Teams],
) -> None:
    world, store, teams = teams_hub
    chain = _chain(world, 4)
    for snap, envelope in chain:
        assert _push(store, teams, snap, envelope)
    pinned = canonical.decode(chain[2][1])["body"]  # seq 3, a delta
    v1 = world.roster_v1()
    pin = Pin(3, object_hash(SUITE, "manifest", pinned))
    v2 = v1.successor(
        SUITE, created_at=NOW + 1, revocations=(Revocation(world.alice.kid, 2, {PROJECT: pin}),)
    ).check(SUITE)
    teams.publish_roster(TEAM, v2.sign(world.root), [], NOW + 1)
    kept = store.manifests(TEAM, PROJECT, world.alice.kid)[world.alice.kid]
    assert [canonical.decode(d)["body"]["seq"] for d in kept] == [3, 1]


def _restored(world: HubWorld, node: Node, name: str) -> Node:
    """A copy of ``node``'s home and store as they are now: restored later, it is a
    store put back from an old backup."""
    home = world.root / name
    shutil.copytree(node.home, home, ignore=shutil.ignore_patterns("store.db*", "*.lock"))
    with sqlite3.connect(home / "store.db") as copy:
        node.store.connection.backup(copy)
    copy.close()
    key = load_member_key(home)
    store = MemoryStore.open(home / "store.db", author=key.kid)
    team = Team(home, store, key, TeamConfig.load(home), world.transport_for(key))
    restored = Node(name, home, key, store, team)
    world.nodes[name] = restored
    return restored


@pytest.mark.slow
def test_a_store_restored_from_before_the_hub_dropped_its_base_syncs_again(
    world: HubWorld,
) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    for i in range(300):
        alice.remember(f"decision number {i} about the build")
    alice.sync()
    alice.remember("one change")
    alice.sync()  # seq 2: a delta against seq 1
    backup = _restored(world, alice, "alice-restored")
    for i in range(120):  # most buckets change: seq 3 is full, the next deltas' base
        alice.remember(f"a later batch, item {i}")
    alice.sync()
    for i in range(2):
        alice.remember(f"later change {i}")
        alice.sync()
    kept = alice.t.transport.writer_manifests(PROJECT, alice.key.kid)
    assert 1 not in [canonical.decode(d)["body"]["seq"] for d in kept]  # the old base: gone

    summary = backup.sync()  # the restored store reads its newer chain back from the hub
    assert not summary.refused
    assert backup.t.transport.newest_seqs(PROJECT)[alice.key.kid] > 5
    assert not bob.sync().refused


def test_the_hub_checks_the_heads_a_delta_left_unchanged_since_its_base(
    teams_hub: tuple[World, SQLiteStorage, Teams],
) -> None:
    world, store, teams = teams_hub
    forged = Head(world.bob.kid, PROJECT, 1, "ab" * 32)  # a bob seq 1 the hub never held
    records = [make_record(world.alice, i) for i in range(300)]
    full = world.snapshot(world.alice, records, heads=[forged])
    assert _push(store, teams, full, full.envelope)  # the hub holds no bob head yet
    bob1 = world.snapshot(world.bob, [make_record(world.bob, 1)])
    assert _push(store, teams, bob1, bob1.envelope)  # the real bob seq 1
    records[3] = make_record(world.alice, 3, content="changed")
    snap = world.snapshot(
        world.alice, records, seq=2, prev=full.hash, heads=[forged],
        previous=PreviousSnapshot(full.manifest, full.digests),
    )  # fmt: skip
    delta = snap.manifest.against(SUITE, full.manifest, full.hash or "")
    assert delta.delta is not None
    assert delta.delta.heads is not None
    assert delta.delta.heads.changed == ()  # bob's head is only in the base's list
    with pytest.raises(Refusal) as caught:
        _push(store, teams, snap, delta.sign(world.alice))
    assert caught.value.code == reasons.EQUIVOCATION
