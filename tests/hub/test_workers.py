"""The hub's worker threads: results and exceptions come back to the loop, threads are
started only as calls need them (at most ``size``), and end once idle or closed.  The
committer (:class:`Batcher`): the calls queued while a batch runs form the next one,
each gets its own outcome, and closing runs what was queued."""

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
from sealmem.hub import workers as hub_workers
from sealmem.hub.app import create_app
from sealmem.hub.workers import Batcher, Workers

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


class _Runner:
    """Runs each batch's calls in turn; the first batch waits for ``release``."""

    def __init__(self) -> None:
        self.batches: list[int] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, calls: list[object]) -> list[tuple[object, BaseException | None]]:
        self.batches.append(len(calls))
        if len(self.batches) == 1:
            self.started.set()
            assert self.release.wait(10)
        out: list[tuple[object, BaseException | None]] = []
        for call in calls:
            try:
                out.append((call(), None))  # type: ignore[operator]
            except BaseException as exc:  # as GroupCommit.batch: each call's own outcome
                out.append((None, exc))
        return out


def test_calls_queued_while_a_batch_runs_form_the_next_batch() -> None:
    runner = _Runner()
    batcher = Batcher(runner, max_calls=4, name="test-committer-a")

    async def main() -> list[object]:
        first = asyncio.ensure_future(batcher.run(lambda: "first"))
        await asyncio.to_thread(runner.started.wait, 10)
        rest = [asyncio.ensure_future(batcher.run(lambda i=i: i)) for i in range(6)]
        failing = asyncio.ensure_future(batcher.run(_raise))
        await asyncio.sleep(0.05)  # all queued behind the first batch
        runner.release.set()
        with pytest.raises(ValueError, match="refused"):
            await failing
        return [await first, *[await r for r in rest]]

    try:
        assert asyncio.run(main()) == ["first", 0, 1, 2, 3, 4, 5]
    finally:
        batcher.close()
    assert runner.batches == [1, 4, 3]  # at most max_calls a batch, in arrival order
    assert (batcher.batches, batcher.calls) == (3, 8)
    assert _alive("test-committer-a") == 0


def test_a_failing_runner_fails_every_call_of_its_batch_and_the_next_batch_runs() -> None:
    calls: list[int] = []

    def runner(batch: object) -> list[tuple[object, BaseException | None]]:
        calls.append(1)
        if len(calls) == 1:
            raise OSError("the database went away")
        return [(fn(), None) for fn in batch]  # type: ignore[attr-defined]

    batcher = Batcher(runner, name="test-committer-b")

    async def main() -> None:
        with pytest.raises(OSError, match="went away"):
            await batcher.run(lambda: 1)
        assert await batcher.run(lambda: 2) == 2

    try:
        asyncio.run(main())
    finally:
        batcher.close()


def test_close_runs_the_queued_calls_and_a_later_call_starts_a_thread() -> None:
    runner = _Runner()
    batcher = Batcher(runner, name="test-committer-c")
    ran: list[int] = []

    async def main() -> None:
        first = asyncio.ensure_future(batcher.run(lambda: ran.append(0)))
        await asyncio.to_thread(runner.started.wait, 10)
        queued = [asyncio.ensure_future(batcher.run(lambda i=i: ran.append(i))) for i in (1, 2)]
        await asyncio.sleep(0.05)
        closing = asyncio.ensure_future(asyncio.to_thread(batcher.close))
        await asyncio.sleep(0.05)
        runner.release.set()
        await closing
        await asyncio.gather(first, *queued)
        assert _alive("test-committer-c") == 0
        assert await batcher.run(lambda: 7) == 7  # a new thread, after the close

    try:
        asyncio.run(main())
    finally:
        batcher.close()
    assert ran == [0, 1, 2]
    assert _alive("test-committer-c") == 0


def test_a_cancelled_caller_s_call_still_runs() -> None:
    runner = _Runner()
    batcher = Batcher(runner, name="test-committer-d")
    ran = threading.Event()

    async def main() -> None:
        first = asyncio.ensure_future(batcher.run(lambda: None))
        await asyncio.to_thread(runner.started.wait, 10)
        gone = asyncio.ensure_future(batcher.run(ran.set))
        await asyncio.sleep(0.05)
        gone.cancel()
        runner.release.set()
        await first
        assert await asyncio.to_thread(ran.wait, 10)

    try:
        asyncio.run(main())
    finally:
        batcher.close()


def _stop() -> None:
    raise StopIteration("a bug")


def _exit() -> None:
    raise SystemExit(3)


def test_a_call_raising_what_a_future_cannot_carry_fails_alone_and_its_batch_is_answered() -> None:
    """StopIteration cannot be set on a future (TypeError in the loop's callback), and
    SystemExit raised into a task stops the loop: either becomes the caller's
    RuntimeError, and the calls of the same batch get their own answers."""
    runner = _Runner()
    batcher = Batcher(runner, name="test-committer-e")
    pool = Workers(size=2, name="test-workers-e")

    async def main() -> list[object]:
        first = asyncio.ensure_future(batcher.run(lambda: "first"))
        await asyncio.to_thread(runner.started.wait, 10)
        calls = [_stop, lambda: 1, _exit, lambda: 2]
        batch = [asyncio.ensure_future(batcher.run(fn)) for fn in calls]
        await asyncio.sleep(0.05)  # all four queued: one batch
        runner.release.set()
        done = await asyncio.wait_for(asyncio.gather(first, *batch, return_exceptions=True), 10)
        alone = [pool.run(_stop), pool.run(_exit), pool.run(int, "5")]
        more = await asyncio.wait_for(asyncio.gather(*alone, return_exceptions=True), 10)
        return [*done, *more]

    try:
        answers = asyncio.run(main())
    finally:
        batcher.close()
        pool.close()
    assert runner.batches == [1, 4]
    assert [answers[i] for i in (0, 2, 4, 7)] == ["first", 1, 2, 5]
    for i, cause in [(1, StopIteration), (3, SystemExit), (5, StopIteration), (6, SystemExit)]:
        assert isinstance(answers[i], RuntimeError)
        assert isinstance(answers[i].__cause__, cause)  # type: ignore[union-attr]


def test_an_idle_committer_ends_and_a_later_call_starts_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An app whose lifespan never runs (mounted in another app, driven by an
    ``ASGITransport``) never closes its committer: the thread must not outlive its work."""
    monkeypatch.setattr(hub_workers, "IDLE_S", 0.05)
    runner = _Runner()
    runner.release.set()
    batcher = Batcher(runner, name="test-committer-f")
    try:
        assert asyncio.run(batcher.run(lambda: 1)) == 1
        deadline = time.monotonic() + 10
        while _alive("test-committer-f") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _alive("test-committer-f") == 0
        assert asyncio.run(batcher.run(lambda: 2)) == 2  # a new thread, when needed
    finally:
        batcher.close()
    assert _alive("test-committer-f") == 0


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
