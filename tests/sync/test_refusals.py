"""A hostile folder: every bad object is refused with a named reason, the rest still syncs.

Each case lets alice publish, then alters the folder the way an attacker with
write access (or alice's stolen key, for the fork) could; carol publishes
honestly at the same time.  Bob's sync must refuse the altered object with the
expected reason, still pull carol's memory, and change nothing else it stores.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client import Memory
from sealmem.client.sync import replica
from sealmem.crypto import SUITE, random_bytes
from sealmem.protocol import reasons
from sealmem.protocol.manifest import Head
from sealmem.protocol.snapshot import build_snapshot
from tests.sync.conftest import PROJECT, Node, World, make_world


def _writer_dir(world: World, node: Node, project: str = PROJECT) -> Path:
    team = world.nodes["admin"].t.config.team
    return world.folder / "sealmem" / team / "snapshots" / project / node.key.kid


def _newest_manifest(world: World, node: Node) -> Path:
    return sorted(_writer_dir(world, node).glob("manifest-*.json"))[-1]


def _tamper_chunk(world: World, alice: Node, _tmp: Path) -> None:
    chunks = sorted(
        (_writer_dir(world, alice) / "chunks").iterdir(), key=lambda p: p.stat().st_mtime_ns
    )
    data = bytearray(chunks[-1].read_bytes())
    data[len(data) // 2] ^= 0x01
    chunks[-1].write_bytes(bytes(data))


def _truncate_manifest(world: World, alice: Node, _tmp: Path) -> None:
    path = _newest_manifest(world, alice)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garbage_manifest(world: World, alice: Node, _tmp: Path) -> None:
    _newest_manifest(world, alice).write_bytes(random_bytes(700))


def _roll_back(world: World, alice: Node, _tmp: Path) -> None:
    _newest_manifest(world, alice).unlink()  # bob already trusts it; seq 1 stays behind


def _fork(world: World, alice: Node, _tmp: Path) -> None:
    """Alice's key signs a seq that does not continue the chain bob trusts."""
    team = alice.t
    roster = team.roster()
    epoch = roster.projects[PROJECT]
    key = team.content_key(team.trusted(), PROJECT, epoch)
    assert key is not None
    records = replica.publishable_records(team.conn, alice.key.kid, PROJECT)
    forged = [r.evolve(content="FORGED history") if i == 0 else r for i, r in enumerate(records)]
    own = replica.load_own_chain(team.conn, PROJECT)
    assert own is not None
    snap = build_snapshot(
        SUITE, key, alice.key, team=team.config.team, project=PROJECT, epoch=epoch,
        roster_version=roster.version, seq=own.seq + 1, prev="0" * 64, records=forged,
        random=random_bytes,
    )  # fmt: skip
    team.transport.push(PROJECT, alice.key.kid, own.seq + 1, snap.envelope, snap.new_chunks)


def _equivocate(world: World, alice: Node, _tmp: Path) -> None:
    """A writer (here the admin's key) claims to have seen another manifest at alice's seq."""
    adm = world.nodes["admin"]
    team = adm.t
    roster = team.roster()
    epoch = roster.projects[PROJECT]
    key = team.content_key(team.trusted(), PROJECT, epoch)
    assert key is not None
    own = replica.load_own_chain(alice.store.connection, PROJECT)
    assert own is not None
    lie = Head(alice.key.kid, PROJECT, own.seq, "f" * 64)
    snap = build_snapshot(
        SUITE, key, adm.key, team=team.config.team, project=PROJECT, epoch=epoch,
        roster_version=roster.version, seq=1, prev=None, records=[], random=random_bytes,
        heads=[lie],
    )  # fmt: skip
    team.transport.push(PROJECT, adm.key.kid, 1, snap.envelope, snap.new_chunks)


def _cross_team(world: World, alice: Node, tmp: Path) -> None:
    other_root = tmp / "other-team"
    other_root.mkdir()
    other = make_world(other_root)
    try:
        other_admin = other.nodes["admin"]
        other_admin.remember("a memory of another team")
        other_admin.sync()
        source = _newest_manifest(other, other_admin)
        shutil.copy(source, _writer_dir(world, alice) / "manifest-000000000099.json")
    finally:
        other.close()


def _cross_project(world: World, alice: Node, _tmp: Path) -> None:
    target = _writer_dir(world, alice, "shared")
    target.mkdir(parents=True)
    shutil.copy(_newest_manifest(world, alice), target / "manifest-000000000009.json")


CASES: list[tuple[str, Callable[[World, Node, Path], None], str, bool]] = [
    ("tampered-chunk", _tamper_chunk, reasons.BAD_CHUNK_ID, False),
    ("truncated-manifest", _truncate_manifest, reasons.NOT_CANONICAL, False),
    ("garbage-manifest", _garbage_manifest, reasons.NOT_CANONICAL, False),
    ("rolled-back", _roll_back, reasons.ROLLBACK, True),
    ("forked", _fork, reasons.FORK, True),
    ("equivocating-witness", _equivocate, reasons.EQUIVOCATION, True),
    ("cross-team", _cross_team, reasons.CROSS_TEAM, True),
    ("cross-project", _cross_project, reasons.CROSS_PROJECT, True),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("attack", "reason", "after_bob_pulled"),
    [pytest.param(a, r, p, id=name) for name, a, r, p in CASES],
)
def test_hostile_objects_are_refused_and_the_rest_still_syncs(
    world: World,
    tmp_path: Path,
    attack: Callable[[World, Node, Path], None],
    reason: str,
    after_bob_pulled: bool,
) -> None:
    refused_by_name_while_the_rest_syncs(world, tmp_path, attack, reason, after_bob_pulled)


def refused_by_name_while_the_rest_syncs(
    world: World,
    tmp_path: Path,
    attack: Callable[[World, Node, Path], None],
    reason: str,
    after_bob_pulled: bool,
) -> Memory:
    """alice publishes, the attack alters what bob will read, carol writes meanwhile:
    bob's sync refuses exactly ``reason``, still gets carol's memory, and changes nothing
    it already held.  Returns carol's memory as bob stored it (its provenance tells the
    transport).  Shared by the folder tests here and the malicious-hub tests."""
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    alice.remember("first note from alice")
    world.sync_all(1)
    alice.remember("second note from alice")
    alice.sync()
    if after_bob_pulled:
        bob.sync()
    before = bob.winners()
    attack(world, alice, tmp_path)
    fresh = carol.remember("carol's note written during the attack")
    carol.sync()

    summary = bob.sync()

    assert [r.reason for r in summary.refused] == [reason], summary.refused
    assert fresh.id in bob.memories()  # everything else still syncs
    after = bob.winners()
    del after[fresh.id]
    assert after == before  # nothing already stored changed
    assert all("FORGED" not in m.content for m in bob.memories().values())
    logged = replica.recent_refusals(bob.store.connection)
    assert logged[0]["reason"] == reason
    return bob.memories()[fresh.id]


@pytest.mark.slow
def test_a_refused_object_does_not_fail_the_sync_or_stop_later_ones(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    alice.remember("alice publishes once")
    alice.sync()
    _garbage_manifest(world, alice, Path())
    first = bob.sync()
    assert [r.reason for r in first.refused] == [reasons.NOT_CANONICAL]
    alice.remember("alice publishes again over the garbage")
    alice.sync()  # a fresh manifest with a higher seq
    second = bob.sync()
    assert second.refused == []
    assert second.pulled_new == 2
