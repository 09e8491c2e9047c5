"""A member learns at sync that its clock is off, weighed against the hub's or the shared
folder's clock and the teammates' clocks signed in what it just pulled: told to fix it only
when the teammates agree with the transport, told that the clocks disagree otherwise; kept
in the store, shown by ``status`` and the MCP ``status`` tool.  The issue saw a member a day
ahead undo a teammate's later forget, told nothing; a later one saw a hub that lies about
its time tell a member with a right clock to fix it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvicorn

from sealmem.client.mcp.tools import MemoryTools
from sealmem.client.sync import clockhealth
from sealmem.client.sync.engine import SyncSummary, sync
from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.session import Team, sync_health
from sealmem.client.sync.watch import quiet_repeats
from sealmem.hub.http.app import create_app
from sealmem.hub.http.server import free_port
from tests.hub.conftest import TEAM, TOKEN, HubWorld, hub_config
from tests.support.cli import Run, per_home

from .conftest import DAY_MS, PROJECT, make_world


def real_ms() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture
def skewed_hub(tmp_path: Path) -> Iterator[str]:
    """A real uvicorn hub on 127.0.0.1 whose clock runs one day ahead of this machine's."""
    config = hub_config(tmp_path / "hub-data", port=free_port())
    app = create_app(config, clock=lambda: real_ms() + DAY_MS)
    server = uvicorn.Server(
        uvicorn.Config(app, host=config.host, port=config.port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive(), "the hub did not start"
        assert time.monotonic() < deadline, "the hub did not start in time"
        time.sleep(0.02)
    try:
        yield f"http://{config.host}:{config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def status_of(tools: MemoryTools) -> dict[str, object]:
    return asyncio.run(tools.status()).sync.model_dump()


def clock_lines(summary: SyncSummary) -> list[str]:
    return [w for w in summary.warnings if w.startswith(clockhealth.WARNING_PREFIXES)]


MIN_MS = 60_000
WARN = clockhealth.WARN_SKEW_MS


@pytest.mark.parametrize(
    ("skew", "teammates", "verdict"),
    [
        (0, [], clockhealth.OK),
        (WARN, [3 * DAY_MS], clockhealth.OK),  # within the bound of the transport: fine
        (-3 * DAY_MS, [20_000], clockhealth.TRANSPORT),  # the hub alone says 3 days behind
        (-3 * DAY_MS, [], clockhealth.UNCONFIRMED),  # nobody to tell which is right
        (-3 * DAY_MS, [2 * 60 * MIN_MS], clockhealth.UNCONFIRMED),  # a 2-hour-old manifest
        (-3 * DAY_MS, [-3 * DAY_MS + MIN_MS], clockhealth.YOURS),  # a teammate dated 3 days on
        (DAY_MS, [DAY_MS + 10_000], clockhealth.YOURS),  # ours a day ahead of both
        (DAY_MS, [DAY_MS + 10_000, 5_000, 9_000], clockhealth.TRANSPORT),  # most agree with us
        (DAY_MS, [DAY_MS, 5_000], clockhealth.TRANSPORT),  # a tie never blames this machine
        (DAY_MS, [DAY_MS, DAY_MS - MIN_MS, 5_000], clockhealth.YOURS),
        (-DAY_MS, [-DAY_MS - WARN - 1], clockhealth.UNCONFIRMED),  # just outside the bound
    ],
)
def test_whose_clock_is_off(skew: int, teammates: list[int], verdict: str) -> None:
    assert clockhealth.judge(skew, teammates) == verdict
    line = clockhealth.Skew(skew, "hub", "http://hub", 1, tuple(teammates)).warning()
    assert (line is None) == (verdict == clockhealth.OK)
    assert (line is not None and "fix the system clock" in line) == (verdict == clockhealth.YOURS)


def test_teammates_word_holds_while_the_gap_stays() -> None:
    told = clockhealth.Skew(-3 * DAY_MS, "hub", "http://hub", 1, (20_000,))
    later = clockhealth.Skew(-3 * DAY_MS + 30_000, "hub", "http://hub", 2)
    assert clockhealth.carried(later, told).verdict == clockhealth.TRANSPORT
    moved = clockhealth.Skew(-4 * DAY_MS, "hub", "http://hub", 2)
    assert clockhealth.carried(moved, told).verdict == clockhealth.UNCONFIRMED
    elsewhere = clockhealth.Skew(-3 * DAY_MS, "hub", "http://other", 2)
    assert clockhealth.carried(elsewhere, told).teammates == ()


def test_a_member_a_day_ahead_of_the_folder_and_its_teammates_is_told(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", "bob", offsets={"alice": DAY_MS})
    try:
        alice, bob = world.nodes["alice"], world.nodes["bob"]
        alice.remember("the deploy key rotates monthly")
        bob.remember("staging runs on port 8443")
        bob.sync()  # bob's signed clock is in what alice pulls next
        warned = clock_lines(alice.sync())
        assert warned == [
            f"your clock is 1 day ahead of the shared folder at {world.folder} and 1 "
            "teammate's freshly signed clock: fix the system clock (timedatectl / NTP); until "
            "then your edits win over teammates' later ones"
        ]
        assert clock_lines(bob.sync()) == []

        kept = clockhealth.load(alice.store.connection)
        assert kept is not None
        assert abs(kept.skew_ms - DAY_MS) < MIN_MS
        assert kept.source == "folder"
        assert kept.verdict == clockhealth.YOURS
        health = sync_health(alice.home, alice.store.connection)
        assert health["clock"]["warning"] == warned[0]
        assert warned[0] in health["alarms"]
        bob_clock = sync_health(bob.home, bob.store.connection)["clock"]
        assert bob_clock["ok"]
        assert abs(bob_clock["skew_ms"]) < MIN_MS

        tools = MemoryTools(lambda: alice.store, PROJECT)
        shown = status_of(tools)
        assert shown["clock"]["warning"] == warned[0]
        assert warned[0] in shown["alarms"]
    finally:
        world.close()


def test_a_member_alone_is_not_told_to_fix_its_clock(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", offsets={"alice": DAY_MS})
    try:
        alice = world.nodes["alice"]
        alice.remember("a lesson")
        assert clock_lines(alice.sync()) == [
            f"the clocks disagree: the shared folder at {world.folder} is 1 day behind this "
            "machine's clock, and no teammate's freshly signed clock tells which is right yet: "
            "check this machine's clock against another source (timedatectl / NTP); if it is "
            "right, tell whoever runs the folder"
        ]
        kept = clockhealth.load(alice.store.connection)
        assert kept is not None
        assert kept.verdict == clockhealth.UNCONFIRMED
    finally:
        world.close()


def test_a_sync_that_measures_nothing_keeps_the_last_measurement(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", offsets={"alice": DAY_MS})
    try:
        alice = world.nodes["alice"]
        alice.remember("a lesson")
        alice.sync()
        first = clockhealth.load(alice.store.connection)
        assert first is not None
        assert first.skew_ms > DAY_MS - MIN_MS
        # A later run (a new transport, as each 'sealmem sync' makes) with nothing new
        # to push writes no file, so it measures nothing and keeps the last measurement.
        later = Team.open(alice.home, alice.store, alice.key)
        assert clock_lines(sync(later, clock=alice.clock)) == []
        assert clockhealth.load(alice.store.connection) == first
    finally:
        world.close()


@pytest.mark.slow
def test_a_hub_a_day_ahead_is_named_not_the_members_clock(
    tmp_path: Path,
    skewed_hub: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(
        homes, skewed_hub, lambda key: HubTransport(skewed_hub, TEAM, key, operator_token=TOKEN)
    )
    try:
        admin = world.create()
        (alice,) = world.join("alice")
        alice.remember("the hub's clock is a day ahead")
        alone = clock_lines(alice.sync())  # nothing from a teammate yet: nobody can tell
        assert len(alone) == 1
        assert "no teammate's freshly signed clock tells which is right" in alone[0]
        admin.remember("the admin's clock is right")
        admin.sync()
        line = (
            f"the clocks disagree: the hub at {skewed_hub} is 1 day ahead of this machine's "
            "clock, which agrees with 1 teammate's freshly signed clock: the hub's clock is "
            "wrong, or it lies about it; nothing to fix on this machine (tell whoever runs "
            "the hub)"
        )
        assert clock_lines(alice.sync()) == [line]
        kept = clockhealth.load(alice.store.connection)
        assert kept is not None
        assert abs(kept.skew_ms + DAY_MS) < MIN_MS
        assert kept.verdict == clockhealth.TRANSPORT

        cli: Callable[..., Run] = per_home(homes, capsys, monkeypatch)
        synced = cli("alice", "sync")  # nothing new pulled: the teammate's word still holds
        assert "fix the system clock" not in synced.err
        assert [w for w in synced.err.splitlines() if "clocks disagree" in w] == [
            f"warning: {line}"
        ]
        status = cli("alice", "status")
        assert "fix the system clock" not in status.out
        assert "clock: the hub is 1 day ahead of this machine (teammates agree" in status.out
        assert f"ALARM {line}" in status.out
        assert cli("alice", "status", "--json").json()["sync"]["clock"]["source"] == "hub"
    finally:
        world.close()


def test_watch_says_a_clock_warning_once_until_it_changes() -> None:
    clock_off = "your clock is 1 day ahead of the hub at http://hub: fix the system clock"
    first = SyncSummary(warnings=[clock_off, "another warning"])
    shown = quiet_repeats(first, set())
    assert first.warnings == [clock_off, "another warning"]
    again = SyncSummary(warnings=[clock_off, "another warning"])
    shown = quiet_repeats(again, shown)
    assert again.warnings == ["another warning"]
    changed = "your clock is 2 days ahead of the hub at http://hub: fix the system clock"
    later = SyncSummary(warnings=[changed])
    quiet_repeats(later, shown)
    assert later.warnings == [changed]
