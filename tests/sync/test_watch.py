"""``sync --watch`` neither spins nor hammers: a sync's own writes to the store do not wake
the next one, and failed syncs are retried after an exponential backoff with full jitter.

Real store, real folder, real syncs; the backoff runs over a simulated timeline (an
injected clock and a wait that records what it was asked to wait), and the real-time
test is bounded by loop iterations, not by timed asserts."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sealmem.client.sync.backoff import Backoff
from sealmem.client.sync.engine import SyncSummary
from sealmem.client.sync.watch import local_version, watch
from sealmem.protocol.errors import InputError, SealmemError

from .conftest import Node, World, make_world

CAPS = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 300.0, 300.0, 300.0]


@pytest.fixture
def alice_world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, "alice")
    try:
        w.nodes["alice"].sync()
        yield w
    finally:
        w.close()


def attempts(node: Node) -> list[dict[str, object]]:
    """Every sync run the store recorded (failed ones carry ``error``), oldest first."""
    rows = node.store.connection.execute("SELECT summary_json FROM sync_runs ORDER BY seq")
    return [json.loads(row[0]) for row in rows]


class Timeline:
    """A simulated clock; ``wait`` records each wait and moves time on by it."""

    def __init__(self, stop: threading.Event, until: float) -> None:
        self.now = 0.0
        self.waits: list[float] = []
        self.stop, self.until = stop, until
        self.at: list[tuple[float, Callable[[], None]]] = []  # things that happen at a time

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        assert seconds >= 0
        self.waits.append(seconds)
        self.now += seconds
        for when, event in list(self.at):
            if self.now >= when:
                self.at.remove((when, event))
                event()
        if self.now >= self.until or len(self.waits) > 10_000:
            self.stop.set()


def test_backoff_caps() -> None:
    backoff = Backoff()
    assert [backoff.ceiling(n) for n in range(1, 13)] == CAPS
    assert backoff.ceiling(10_000) == 300.0  # no overflow after days of failures
    assert backoff.delay(3, lambda: 0.5) == 2.0
    with pytest.raises(InputError, match="backoff"):
        Backoff(max_s=0)


@pytest.mark.slow
def test_unreachable_folder_is_retried_on_a_backoff_then_heals(
    alice_world: World, tmp_path: Path
) -> None:
    alice = alice_world.nodes["alice"]
    alice.remember("written while the share is gone")  # unpushed: the old loop spun on it
    folder = alice_world.folder
    gone = tmp_path / "unmounted"
    folder.rename(gone)
    stop = threading.Event()
    sim = Timeline(stop, until=1800.0)
    sim.at.append((600.0, lambda: gone.rename(folder)))  # the share comes back
    errors: list[SealmemError] = []
    recovered: list[int] = []
    synced: list[SyncSummary] = []
    watch(
        alice.t,
        on_sync=synced.append,
        on_error=errors.append,
        on_recovered=recovered.append,
        interval_s=3600.0,
        stop=stop,
        clock=sim.clock,
        wait=sim.wait,
        rand=lambda: 1.0,  # the top of each jitter range: the waits are the caps
    )
    # failed at 0, 1, 3, 7, ..., 255, 511; the share is back at 600; 811 succeeds
    assert sim.waits[:10] == CAPS[:10]
    runs = attempts(alice)
    failed = [run for run in runs if "error" in run]
    assert len(failed) == 10, runs  # 0, 1, 3, ..., 511: ten attempts in 811 s, not thousands
    assert len(errors) == 1, errors  # one line for the failing state, not one per attempt
    assert recovered == [10]
    assert synced
    assert synced[0].pushed_versions >= 1  # the memory went out once it could
    assert all(w >= 3600.0 - 1e-6 for w in sim.waits[10:]), sim.waits  # healthy: interval


@pytest.mark.slow
def test_backoff_is_jittered_within_its_caps(alice_world: World, tmp_path: Path) -> None:
    alice = alice_world.nodes["alice"]
    alice.remember("unpushed while the share is gone")
    alice_world.folder.rename(tmp_path / "unmounted")
    stop = threading.Event()
    sim = Timeline(stop, until=2400.0)
    errors: list[SealmemError] = []
    before = len(attempts(alice))
    watch(
        alice.t,
        on_sync=lambda s: None,
        on_error=errors.append,
        interval_s=60.0,
        stop=stop,
        clock=sim.clock,
        wait=sim.wait,
        rand=random.Random(7).random,
    )
    made = len(attempts(alice)) - before
    assert made == len(sim.waits)  # every attempt failed, and each was followed by its wait
    for n, waited in enumerate(sim.waits, start=1):
        assert 0.0 <= waited <= Backoff().ceiling(n), (n, waited)
    assert len(set(sim.waits)) > 1  # randomised, not a fixed schedule
    assert len(errors) == 1
    # 40 simulated minutes of an unreachable share cost tens of attempts, not thousands
    assert 8 <= made <= 60, made


@pytest.mark.slow
def test_a_syncs_own_writes_do_not_wake_the_next_sync(alice_world: World) -> None:
    """Real store, real folder, real watchfiles: only a memory write wakes a sync."""
    alice = alice_world.nodes["alice"]
    (alice_world.folder / "sealmem").joinpath("stray.json").write_text("{}")
    stop = threading.Event()
    synced: list[SyncSummary] = []
    errors: list[SealmemError] = []
    iterations = 0
    wrote_at: int | None = None

    def wait(seconds: float) -> None:
        nonlocal iterations, wrote_at
        iterations += 1
        time.sleep(min(seconds, 0.1))  # real time passes, in small steps
        if iterations == 20:  # the first sync's run record has long been written
            assert len(synced) == 1, "the sync's own bookkeeping woke another sync"
            alice.remember("a real change: wakes a sync")
            wrote_at = iterations
        if wrote_at is not None and len(synced) == 2 and iterations >= wrote_at + 40:
            stop.set()  # 40 more iterations (4 s) without another sync
        if iterations > 600:  # bound the test if the write never wakes a sync
            stop.set()

    before = local_version(alice.t)
    watch(
        alice.t,
        on_sync=synced.append,
        on_error=errors.append,
        interval_s=3600.0,
        debounce_ms=50,
        stop=stop,
        wait=wait,
    )
    assert not errors
    assert local_version(alice.t) != before
    assert len(synced) == 2, [s.line() for s in synced]  # the start, then the write: no more
    assert synced[1].pushed_versions == 1
