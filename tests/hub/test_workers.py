"""The hub's worker threads: results and exceptions come back to the loop, threads are
started only as calls need them (at most ``size``), and end once idle or closed."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from sealmem.hub import workers as hub_workers
from sealmem.hub.workers import Workers


def _alive(name: str) -> int:
    return sum(1 for t in threading.enumerate() if t.name == name)


def test_results_and_errors_come_back_and_threads_grow_only_as_needed() -> None:
    pool = Workers(size=3, name="test-workers-a")

    async def main() -> None:
        assert await pool.run(lambda a, b: a + b, 2, 3) == 5
        with pytest.raises(ValueError, match="refused"):
            await pool.run(_raise)
        assert _alive("test-workers-a") == 1  # one call at a time: one thread
        gate = threading.Barrier(3, timeout=10)
        # three calls that can only finish together need three threads, and get them
        assert await asyncio.gather(*(pool.run(gate.wait) for _ in range(3))) is not None
        assert _alive("test-workers-a") == 3
        # more calls than threads: they queue, and all run
        done = await asyncio.gather(*(pool.run(time.sleep, 0.01) for _ in range(20)))
        assert done == [None] * 20
        assert _alive("test-workers-a") == 3

    try:
        asyncio.run(main())
    finally:
        pool.close()
    deadline = time.monotonic() + 10
    while _alive("test-workers-a") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _alive("test-workers-a") == 0


def test_an_idle_thread_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub_workers, "IDLE_S", 0.05)
    pool = Workers(size=2, name="test-workers-b")
    asyncio.run(pool.run(int))
    deadline = time.monotonic() + 10
    while _alive("test-workers-b") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _alive("test-workers-b") == 0
    assert asyncio.run(pool.run(int, "7")) == 7  # and a new one starts when needed
    pool.close()


def _raise() -> None:
    raise ValueError("refused")
