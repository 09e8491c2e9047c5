"""A member learns at sync that its clock is off against the hub's or the shared folder's:
one warning line with the fix, kept in the store, shown by ``status`` and the MCP ``status``
tool.  The issue saw a member a day ahead undo a teammate's later forget, told nothing."""

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


def test_a_member_a_day_ahead_of_the_folder_is_told(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", "bob", offsets={"alice": DAY_MS})
    try:
        alice, bob = world.nodes["alice"], world.nodes["bob"]
        alice.remember("the deploy key rotates monthly")
        bob.remember("staging runs on port 8443")
        warned = [w for w in alice.sync().warnings if "your clock" in w]
        assert warned == [
            f"your clock is 1 day ahead of the shared folder at {world.folder}: fix the "
            "system clock (timedatectl / NTP); until then your edits win over teammates' "
            "later ones"
        ]
        assert not [w for w in bob.sync().warnings if "your clock" in w]

        kept = clockhealth.load(alice.store.connection)
        assert kept is not None
        assert abs(kept.skew_ms - DAY_MS) < 60_000
        assert kept.source == "folder"
        health = sync_health(alice.home, alice.store.connection)
        assert health["clock"]["warning"] == warned[0]
        assert warned[0] in health["alarms"]
        bob_clock = sync_health(bob.home, bob.store.connection)["clock"]
        assert bob_clock["ok"]
        assert abs(bob_clock["skew_ms"]) < 60_000

        tools = MemoryTools(lambda: alice.store, PROJECT)
        shown = status_of(tools)
        assert shown["clock"]["warning"] == warned[0]
        assert warned[0] in shown["alarms"]
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
        assert first.skew_ms > DAY_MS - 60_000
        # A later run (a new transport, as each 'sealmem sync' makes) with nothing new
        # to push writes no file, so it measures nothing and keeps the last measurement.
        later = Team.open(alice.home, alice.store, alice.key)
        assert not [w for w in sync(later, clock=alice.clock).warnings if "your clock" in w]
        assert clockhealth.load(alice.store.connection) == first
    finally:
        world.close()


@pytest.mark.slow
def test_a_hub_a_day_ahead_tells_every_member(
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
        world.create()
        (alice,) = world.join("alice")
        alice.remember("the hub's clock is a day ahead")
        summary = alice.sync()
        line = f"your clock is 1 day behind the hub at {skewed_hub}: fix the system clock"
        assert [w for w in summary.warnings if "your clock" in w] == [line + " (timedatectl / NTP)"]
        kept = clockhealth.load(alice.store.connection)
        assert kept is not None
        assert abs(kept.skew_ms + DAY_MS) < 60_000

        cli: Callable[..., Run] = per_home(homes, capsys, monkeypatch)
        synced = cli("alice", "sync")
        warnings = [w for w in synced.err.splitlines() if "your clock" in w]
        assert len(warnings) == 1
        assert line in warnings[0]
        status = cli("alice", "status")
        assert "clock: 1 day behind the hub" in status.out
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
