"""Witnessed heads listed against the base (SPEC.md "Witness encoding") through a real
folder: a teammate's v3 delta names only the heads that moved since its base, and a
newcomer still takes every head it witnesses as a floor, rebuilt from the base the folder
holds (none kept yet).
"""

from __future__ import annotations

import dataclasses

import pytest

from sealmem.client.sync.engine import sync
from sealmem.client.sync.session import Team
from sealmem.protocol import canonical, reasons
from sealmem.protocol.manifest import DELTA_FORMAT, MANIFEST_FORMAT
from tests.support.withholding import capture, replay
from tests.sync.conftest import PROJECT, Node, World

pytestmark = pytest.mark.slow

SECRET = "the staging database password rotates on fridays, ask ops for it"


def _hostile(node: Node) -> Team:
    return dataclasses.replace(
        node.t, transport=Team.open(node.home, node.store, node.key).transport
    )


def _newest_body(node: Node, writer: Node) -> dict:  # type: ignore[type-arg]
    data = node.t.transport.newest_manifest(PROJECT, writer.key.kid)
    assert data is not None
    return canonical.decode(data)["body"]  # type: ignore[no-any-return]


def _holds(node: Node, text: str) -> bool:
    conn = node.store.connection
    sql = "SELECT COUNT(*) FROM memories WHERE content LIKE ?"
    return bool(conn.execute(sql, (f"%{text}%",)).fetchone()[0])


def test_a_head_left_unchanged_in_a_delta_is_still_a_floor_for_a_newcomer(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    note = alice.remember(SECRET)
    alice.sync()  # seq 1 holds the text
    seq1 = capture(alice.t.transport, PROJECT, alice.key.kid)
    alice.store.forget(note.id, reason="a secret does not belong in team memory")
    alice.sync()  # seq 2: the tombstone
    bob.remember("bob's first note")
    bob.sync()  # bob's full manifest witnesses alice's seq 2
    assert _newest_body(bob, bob)["format"] == MANIFEST_FORMAT
    bob.remember("bob's second note")
    bob.sync()
    body = _newest_body(bob, bob)
    assert body["format"] == DELTA_FORMAT
    assert "heads" not in body  # alice's head did not move: the delta does not list it
    assert alice.key.kid not in [h["writer"] for h in body["heads_changed"]]

    (dave,) = world.add_members("dave")
    hostile = _hostile(dave)
    replay(hostile.transport, PROJECT, alice.key.kid, *seq1)
    summary = sync(hostile, clock=dave.clock)
    refused = [r for r in summary.refused if r.object.startswith(f"manifest {alice.key.kid[:8]}")]
    assert [r.reason for r in refused] == [reasons.BEHIND_WITNESS], summary.refused
    assert bob.key.kid in refused[0].detail
    assert "seq 2" in refused[0].detail
    assert not _holds(dave, "staging database password")
    assert dave.t.trusted().head(bob.key.kid, PROJECT).seq == body["seq"]  # bob's delta read
    assert _holds(dave, "bob's second note")


def test_a_withheld_base_refuses_the_delta_but_its_listed_heads_still_teach(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    bob.remember("bob's first note")
    bob.sync()  # bob's full manifest: no alice yet
    note = alice.remember(SECRET)
    alice.sync()
    seq1 = capture(alice.t.transport, PROJECT, alice.key.kid)
    alice.store.forget(note.id, reason="a secret does not belong in team memory")
    alice.sync()
    bob.remember("bob's second note")
    bob.sync()  # a delta that lists alice's seq 2 as changed
    body = _newest_body(bob, bob)
    assert body["format"] == DELTA_FORMAT
    assert [h["seq"] for h in body["heads_changed"] if h["writer"] == alice.key.kid] == [2]

    (dave,) = world.add_members("dave")
    hostile = _hostile(dave)
    replay(hostile.transport, PROJECT, alice.key.kid, *seq1)
    hostile.transport.base_manifests = lambda p, w, s: []  # type: ignore[method-assign]
    summary = sync(hostile, clock=dave.clock)
    by = {r.object.split()[1][:8]: r.reason for r in summary.refused}
    assert by[alice.key.kid[:8]] == reasons.BEHIND_WITNESS, summary.refused
    assert by[bob.key.kid[:8]] == reasons.MISSING_BASE, summary.refused
    assert not _holds(dave, "staging database password")


def test_a_withheld_base_is_asked_for_once_per_pull(world: World) -> None:
    """The newest v3 delta of a writer and its older ones name one base: a transport that
    does not answer it is asked once in a pull (floors, the newest, each older one), not
    once per manifest that names it; every one of them is still refused by name."""
    bob = world.nodes["bob"]
    for i in range(5):  # a full manifest, then v3 deltas against it
        bob.remember(f"bob's note {i}")
        bob.sync()
    (dave,) = world.add_members("dave")
    hostile = _hostile(dave)
    asked: list[tuple[str, int]] = []

    def withheld(project: str, writer: str, seq: int) -> list[bytes]:
        asked.append((writer, seq))
        return []

    hostile.transport.base_manifests = withheld  # type: ignore[method-assign]
    older = hostile.transport.writer_manifests(PROJECT, bob.key.kid)
    assert len(older) > 1
    assert {canonical.decode(d)["body"]["format"] for d in older} == {DELTA_FORMAT}
    summary = sync(hostile, clock=dave.clock)
    assert [(r.object.split()[1][:8], r.reason) for r in summary.refused] == [
        (bob.key.kid[:8], reasons.MISSING_BASE)
    ], summary.refused
    assert asked == [(bob.key.kid, 1)]
    assert dave.t.trusted().head(bob.key.kid, PROJECT) is None
    assert not _holds(dave, "bob's note")
