"""Recall treats a member's devices as the member (issue 27 review): a correction written
on a sibling device demotes the memory it supersedes, for the member and for teammates,
as the member's own correction does; a teammate's correction stays a proposal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client.recall import sql
from sealmem.client.sync.session import Team

from .conftest import Node, World, make_world
from .device_runs import add_device

pytestmark = pytest.mark.slow


def _open(node: object) -> Team:
    return Team.open(node.home, node.store, node.key)  # type: ignore[attr-defined]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, "alice", "bob")
    w.sync_all(1)
    yield w
    w.close()


def _superseded(node: Node, memory_id: str) -> bool:
    conn = node.store.connection
    (rowid,) = conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()
    (row,) = sql.fetch(conn, [rowid])
    return bool(row[8])


def test_a_correction_from_a_sibling_device_demotes_the_memory(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    desktop = world.node("desktop")
    add_device(alice, desktop, world.nodes["admin"], _open)
    old = alice.remember("The staging database listens on port 5433.")
    teammates = alice.remember("The cache is flushed every night at two.")
    for node in (alice, desktop, bob):
        node.sync()
    desktop.remember("The staging database listens on 6543 now.", supersedes=[old.id])
    bob.remember("The cache is flushed every hour.", supersedes=[teammates.id])
    for node in (desktop, bob, alice, bob):
        node.sync()
    # the member's own correction (another device of hers): demoted on her laptop, her
    # desktop and bob's replica alike
    assert [_superseded(n, old.id) for n in (alice, desktop, bob)] == [True, True, True]
    # a teammate's correction of alice's memory is a proposal: it demotes nothing on hers
    assert _superseded(alice, teammates.id) is False
    assert _superseded(desktop, teammates.id) is False


def test_muting_the_member_takes_back_an_accepted_correction_from_any_of_its_devices(
    world: World,
) -> None:
    from sealmem.client.store.trust_rows import save_member_state, save_verdict, version_key

    alice, bob, reader = world.nodes["alice"], world.nodes["bob"], world.nodes["admin"]
    desktop = world.node("desktop")
    add_device(alice, desktop, reader, _open)
    old = bob.remember("The release branch is cut on Thursdays.")
    for node in (bob, desktop, reader):
        node.sync()
    fix = desktop.remember("The release branch is cut on Wednesdays.", supersedes=[old.id])
    for node in (desktop, reader):
        node.sync()
    assert _superseded(reader, old.id) is False  # alice's correction of bob's: a proposal
    conn = reader.store.connection
    save_verdict(conn, version_key(reader.store.get(fix.id).record), "accepted", reader.clock())
    assert _superseded(reader, old.id) is True  # accepted: it applies
    save_member_state(conn, alice.key.kid, "muted", reader.clock())  # alice, the member
    assert _superseded(reader, old.id) is False  # muted: every device's change is taken back
