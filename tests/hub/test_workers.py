"""The hub's worker threads: results and exceptions come back to the loop, threads are
started only as calls need them (at most ``size``), and end once idle or closed; a call
whose caller left still runs."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import threading
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.sync.hub import HubTransport
from sealmem.hub.http import workers as hub_workers
from sealmem.hub.http.app import create_app
from sealmem.hub.http.workers import Workers

from .conftest import IN_PROCESS_URL, TEAM, TOKEN, HubWorld, hub_config, signed


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


def test_a_cancelled_caller_s_call_still_runs() -> None:
    pool = Workers(size=1, name="test-workers-d")
    release, ran = threading.Event(), threading.Event()

    async def main() -> None:
        first = asyncio.ensure_future(pool.run(release.wait, 10))
        gone = asyncio.ensure_future(pool.run(ran.set))
        await asyncio.sleep(0.05)
        gone.cancel()
        release.set()
        await first
        assert await asyncio.to_thread(ran.wait, 10)

    try:
        asyncio.run(main())
    finally:
        pool.close()


def _stop() -> None:
    raise StopIteration("a bug")


def _exit() -> None:
    raise SystemExit(3)


def test_a_call_raising_what_a_future_cannot_carry_is_the_caller_s_runtime_error() -> None:
    """StopIteration cannot be set on a future (TypeError in the loop's callback), and
    SystemExit raised into a task stops the loop: either becomes the caller's
    RuntimeError, and the pool serves the next call."""
    pool = Workers(size=2, name="test-workers-e")

    async def main() -> list[object]:
        calls = [pool.run(_stop), pool.run(_exit), pool.run(int, "5")]
        return await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 10)

    try:
        answers = asyncio.run(main())
    finally:
        pool.close()
    assert answers[2] == 5
    for i, cause in [(0, StopIteration), (1, SystemExit)]:
        assert isinstance(answers[i], RuntimeError)
        assert isinstance(answers[i].__cause__, cause)  # type: ignore[union-attr]


def _open_files(name: str) -> int:
    """File descriptors of this process open on a file called ``name``."""
    fds = Path("/proc/self/fd")
    count = 0
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            count += os.readlink(fd).endswith(os.sep + name)
    return count


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
def test_a_worker_thread_that_ends_takes_its_database_connection_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request that reads in a worker (an admin's DELETE of a join request) opens that
    thread's connection to hub.db; the thread ends once idle and the next burst starts
    another: the connections of ended threads must not pile up until the hub runs out
    of file descriptors."""
    monkeypatch.setattr(hub_workers, "IDLE_S", 0.02)
    homes = tmp_path / "homes"
    homes.mkdir()
    app = create_app(hub_config(tmp_path / "hub"))
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        world = HubWorld(
            homes,
            IN_PROCESS_URL,
            lambda k: HubTransport(IN_PROCESS_URL, TEAM, k, operator_token=TOKEN, client=client),
        )
        admin = world.create()
        path = f"/v1/teams/{TEAM}/requests/{'a' * 26}"
        counts = []
        for _ in range(12):
            answer = client.delete(path, headers=signed(admin.key, "DELETE", path))
            assert answer.status_code == 200
            deadline = time.monotonic() + 10  # the worker thread ends, idle
            while _alive("sealmem-hub-worker") and time.monotonic() < deadline:
                time.sleep(0.01)
            gc.collect()
            counts.append(_open_files("hub.db"))
        world.close()
    assert counts[-1] <= counts[1], counts  # not one more connection per thread
