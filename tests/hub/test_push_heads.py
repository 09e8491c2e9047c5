"""A push is verified against the chain heads it touches: its own slot's and those
it witnesses, read inside the team's write transaction (not every slot's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.crypto import SUITE
from sealmem.hub.errors import Refusal
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.hub.teams import Teams
from sealmem.protocol import reasons
from sealmem.protocol.manifest import Head
from sealmem.protocol.snapshot import Snapshot
from tests.protocol.team_world import NOW, PROJECT, TEAM, World, make_record


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[tuple[World, SQLiteStorage, Teams]]:
    world = World()
    store = SQLiteStorage(tmp_path / "hub")
    teams = Teams(store)
    roster = world.roster_v1()
    keyring = world.keyring(roster).sign(world.root)
    teams.publish_roster(TEAM, roster.sign(world.root), [keyring], NOW)
    yield world, store, teams
    store.close()


def _push(store: SQLiteStorage, teams: Teams, snap: Snapshot) -> bool:
    m = snap.manifest
    for cid, data in snap.new_chunks.items():
        store.put_chunk(TEAM, PROJECT, m.writer, cid, data, NOW)
    return teams.put_manifest(TEAM, PROJECT, m.writer, m.seq, snap.envelope, NOW)


def test_a_push_continues_its_own_chain_only(hub: tuple[World, SQLiteStorage, Teams]) -> None:
    world, store, teams = hub
    first = world.snapshot(world.alice, [make_record(world.alice, 1)])
    assert _push(store, teams, world.snapshot(world.bob, [make_record(world.bob, 9)]))
    assert _push(store, teams, first)
    assert not _push(store, teams, first)  # the same manifest again: nothing new
    prev = first.manifest.hash(SUITE)
    fork = world.snapshot(world.alice, [make_record(world.alice, 2)], seq=2, prev="0" * 64)
    with pytest.raises(Refusal) as caught:
        _push(store, teams, fork)
    assert caught.value.code == reasons.FORK
    assert _push(store, teams, world.snapshot(world.alice, [make_record(world.alice, 2)], seq=2,
                                              prev=prev))  # fmt: skip
    assert store.newest_seqs(TEAM, PROJECT) == {world.alice.kid: 2, world.bob.kid: 1}


def test_a_push_witnessing_another_history_is_refused(
    hub: tuple[World, SQLiteStorage, Teams],
) -> None:
    world, store, teams = hub
    alice = world.snapshot(world.alice, [make_record(world.alice, 1)])
    assert _push(store, teams, alice)
    lie = Head(world.alice.kid, PROJECT, 1, "e" * 64)
    bad = world.snapshot(world.bob, [make_record(world.bob, 1)], heads=[lie])
    with pytest.raises(Refusal) as caught:
        _push(store, teams, bad)
    assert caught.value.code == reasons.EQUIVOCATION
    truth = Head(world.alice.kid, PROJECT, 1, alice.manifest.hash(SUITE))
    assert _push(store, teams, world.snapshot(world.bob, [make_record(world.bob, 1)],
                                              heads=[truth]))  # fmt: skip
