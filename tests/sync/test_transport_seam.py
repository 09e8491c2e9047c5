"""One transport contract, run by the sync engine over the folder and the in-memory transport:
compare-and-swap on seq (two devices of one member never fork its chain) and wait-for-change."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.identity import load_member_key
from sealmem.client.sync.own_chain import KeyInUse
from sealmem.client.sync.session import Team
from sealmem.client.sync.transport import Transport
from tests.support.memory_transport import MemoryTransport
from tests.sync.conftest import PROJECT, Node, World, make_world


@pytest.fixture(params=["folder", "memory"])
def team(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """admin, alice and bob over a real folder, or over one :class:`MemoryTransport`."""
    world = make_world(tmp_path, "alice", "bob")
    if request.param == "memory":
        shared = MemoryTransport.copy_of(world.nodes["admin"].t.transport, [PROJECT, "shared"])
        for node in world.nodes.values():
            node.team = dataclasses.replace(node.t, transport=shared)
    try:
        yield world
    finally:
        world.close()


def second_device(world: World, node: Node, name: str) -> Node:
    """Another home with the same member key file and a copy of ``node``'s store."""
    home = world.root / name
    shutil.copytree(node.home, home, ignore=shutil.ignore_patterns("store.db*", "*.lock"))
    with sqlite3.connect(home / "store.db") as copy:
        node.store.connection.backup(copy)
    copy.close()
    key = load_member_key(home)
    assert key.kid == node.key.kid
    store = MemoryStore.open(home / "store.db", author=key.kid, clock=node.clock)
    device = Node(name, home, key, store, node.offset_ms, Team.open(home, store, key))
    if isinstance(node.t.transport, MemoryTransport):
        device.team = dataclasses.replace(device.t, transport=node.t.transport)
    world.nodes[name] = device
    return device


@pytest.mark.slow
def test_two_devices_of_one_member_never_fork_its_chain(
    team: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, bob = team.nodes["alice"], team.nodes["bob"]
    laptop.remember("written on the laptop first")
    laptop.sync()
    desk = second_device(team, laptop, "alice-desk")  # same key, same chain at seq 1
    laptop_note = laptop.remember("the laptop's second note")
    desk_note = desk.remember("the desk's note")
    transport = desk.t.transport
    real_push = transport.push
    raced: list[int] = []

    def racing_push(project: str, writer: str, seq: int, *rest: object) -> None:
        if not raced:  # between the desk's look at the folder and its push, the laptop
            raced.append(seq)  # lands the same seq and bob accepts it
            assert laptop.sync().pushed_versions == 1
            assert bob.sync().refused == []
        real_push(project, writer, seq, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(transport, "push", racing_push)
    # seq 2 loses the compare-and-swap; the retry finds a head of this chain that this
    # device did not write: another machine writes with this key (SPEC "Restore and
    # copied keys"), so the desk stops before writing anything
    with pytest.raises(KeyInUse):
        desk.sync()
    assert raced == [2]
    assert transport.newest_seqs(PROJECT)[laptop.key.kid] == 2
    pulled = bob.sync()
    assert pulled.refused == []  # no fork
    assert laptop_note.id in bob.memories()
    assert desk_note.id in desk.memories()  # kept where it was written


@pytest.mark.slow
def test_a_memory_travels_through_the_in_memory_transport(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", "bob")
    try:
        shared = MemoryTransport.copy_of(world.nodes["admin"].t.transport, [PROJECT, "shared"])
        shutil.rmtree(world.folder)  # nothing may touch the folder from here on
        for node in world.nodes.values():
            node.team = dataclasses.replace(node.t, transport=shared)
        alice, bob = world.nodes["alice"], world.nodes["bob"]
        mem = alice.remember("deploys freeze on Fridays after 15:00", kind="decision")
        assert alice.sync().pushed_versions == 1
        assert shared.pushes == [(PROJECT, alice.key.kid, 1)]
        pulled = bob.sync()
        assert (pulled.pulled_new, pulled.refused) == (1, [])
        got = bob.store.get(mem.id)
        assert got.content == mem.content
        assert (got.provenance.transport, got.provenance.signer) == ("memory", alice.key.kid)
        assert alice.sync().pushed_versions == 0  # nothing new: no push at all
        assert shared.pushes == [(PROJECT, alice.key.kid, 1)]
    finally:
        world.close()


def _wait_in_thread(
    transport: Transport, cursor: str, me: str
) -> tuple[threading.Thread, list[tuple[str, bool]]]:
    result: list[tuple[str, bool]] = []
    waiter = threading.Thread(
        target=lambda: result.append(transport.wait_for_change(cursor, 60, ignore_writer=me))
    )
    waiter.start()
    return waiter, result


@pytest.mark.slow
def test_wait_for_change_wakes_on_a_teammates_push_not_on_ours(team: World) -> None:
    alice, bob = team.nodes["alice"], team.nodes["bob"]
    watched = bob.t.transport
    me = bob.key.kid
    cursor, changed = watched.wait_for_change(None, 10, ignore_writer=me)
    assert changed is False  # no cursor yet: the current one, at once
    bob.remember("bob's own note")
    bob.sync()
    cursor, changed = watched.wait_for_change(cursor, 0.5, ignore_writer=me)
    assert changed is False  # our own push is not a change

    waiter, result = _wait_in_thread(watched, cursor, me)
    time.sleep(0.3)
    alice.remember("alice publishes while bob waits")
    alice.sync()
    waiter.join(timeout=90)
    [(cursor, changed)] = result
    assert changed is True  # woken by alice's push (a 60 s timeout would say False)

    alice.remember("alice publishes while nobody waits")
    alice.sync()
    _, changed = watched.wait_for_change(cursor, 0, ignore_writer=me)
    assert changed is True  # seen by the next call, not lost


def test_the_default_wait_for_change_reports_nothing_and_waits() -> None:
    class Quiet(MemoryTransport):
        wait_for_change = Transport.wait_for_change

    quiet = Quiet()
    cursor, changed = quiet.wait_for_change(None, 10)
    assert changed is False
    stop = threading.Event()
    stop.set()
    assert quiet.wait_for_change(cursor, 10, stop=stop) == (cursor, False)
