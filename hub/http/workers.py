"""The hub's worker threads: the blocking calls of a request (writes and their
fsyncs, a networked backend) run here, off the event loop.

Starlette's ``run_in_threadpool`` (anyio's worker threads) cost 28-60 µs of CPU a
call on this machine: a capacity limiter, a cancel scope, a context copy, a
worker looked up per call.  :class:`Workers` is what the hub needs of it: up
to ``size`` threads, started when a call finds none idle and ended after
:data:`IDLE_S` without work (as anyio's), one queue (``SimpleQueue``, in C),
and the answer handed back to the loop with one ``call_soon_threadsafe``
(~8 µs a call, measured side by side; the standard library's
``loop.run_in_executor`` over a ``ThreadPoolExecutor`` costs ~20 µs and keeps its
threads, joined at exit, for the life of the process).  As with anyio, a call whose awaiting
task is cancelled still runs to its end (a write is never cut in half); its
result is dropped.

:class:`Batcher` is one thread for the writes that share a commit: it takes every
call queued while its previous batch ran, hands them to a runner that runs them
together (:meth:`sealmem.hub.sqlite_group.GroupCommit.batch`), and answers all of
them with one ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from ..storage import Runner, Storage

__all__ = ["BATCH_CALLS", "IDLE_S", "WORKERS", "Batcher", "Calls", "Workers"]

T = TypeVar("T")

#: threads, as many as anyio's default capacity (requests blocked at once)
WORKERS = 40
#: a thread with no work for this long ends
IDLE_S = 10.0
#: calls in one batch of a :class:`Batcher`, at most (as a group commit's writes)
BATCH_CALLS = 64

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # its awaiting task was cancelled: nobody waits for it
        return
    if error is None:
        future.set_result(value)
    elif isinstance(error, StopIteration) or not isinstance(error, Exception):
        # a future refuses StopIteration (TypeError: the caller would wait for ever), and
        # SystemExit or KeyboardInterrupt raised into a task would stop the event loop
        # (the whole hub) for one call's fault: the caller gets a RuntimeError instead
        wrapped = RuntimeError(f"a call in a hub thread raised {error!r}")
        wrapped.__cause__ = error
        future.set_exception(wrapped)
    else:
        future.set_exception(error)


class Workers:
    """A pool of at most ``size`` daemon threads running blocking calls for the loop."""

    def __init__(self, size: int = WORKERS, name: str = "sealmem-hub-worker") -> None:
        self._size = size
        self._name = name
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0  # threads waiting for a job
        self._waiting = 0  # jobs queued, not yet taken

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread; its result or exception, on the loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._waiting += 1
            start = self._waiting > self._idle and self._threads < self._size
            if start:
                self._threads += 1
        self._queue.put((loop, future, fn, args))
        if start:
            threading.Thread(target=self._work, name=self._name, daemon=True).start()
        return await future

    def _work(self) -> None:
        with self._lock:
            self._idle += 1
        while True:
            try:
                job = self._queue.get(timeout=IDLE_S)
            except queue.Empty:
                job = None
            with self._lock:
                if job is None:  # idle too long, or closing: this thread ends, unless
                    if self._waiting > self._idle - 1:  # a job just queued counts on it
                        continue
                    self._idle -= 1
                    self._threads -= 1
                    return
                self._idle -= 1
                self._waiting -= 1
            loop, future, fn, args = job
            value: Any = None
            error: BaseException | None = None
            try:
                value = fn(*args)
            except BaseException as exc:  # handed to the awaiting task, as anyio does
                error = exc
            del job, fn, args
            with self._lock:  # idle again before the caller learns the result
                self._idle += 1
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle, future, value, error)
            del future, value, error

    def close(self) -> None:
        """End the threads once the calls queued before have run."""
        with self._lock:
            threads = self._threads
        for _ in range(threads):
            self._queue.put(None)


_Call = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]
_Settled = tuple["asyncio.Future[Any]", Any, "BaseException | None"]


def _settle_all(items: list[_Settled]) -> None:
    for future, value, error in items:
        try:  # one call's answer failing must not leave the others of its batch waiting
            _settle(future, value, error)
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)


class Batcher:
    """One thread running calls in batches: the calls queued while a batch ran (at
    most ``max_calls``) form the next one, passed to ``runner`` together.

    A thread starts at the first call and ends at :meth:`close`, after the calls
    queued before it, or after :data:`IDLE_S` without a call (a call after that
    starts another).  As with :class:`Workers`,
    a call whose awaiting task is cancelled still runs (a write is never cut in
    half); its result is dropped."""

    def __init__(
        self, runner: Runner, max_calls: int = BATCH_CALLS, name: str = "sealmem-hub-committer"
    ) -> None:
        self._runner = runner
        self._max = max_calls
        self._name = name
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Call | None] | None = None  # the running thread's
        self._thread: threading.Thread | None = None
        #: batches run, calls run (the ratio is the mean batch)
        self.batches = 0
        self.calls = 0

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` in the batch thread, with the calls queued beside it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._queue is None:
                self._queue = queue.SimpleQueue()
                self._thread = threading.Thread(
                    target=self._work, args=(self._queue,), name=self._name, daemon=True
                )
                self._thread.start()
            self._queue.put((loop, future, fn))
        return await future

    def _work(self, calls: queue.SimpleQueue[_Call | None]) -> None:
        while True:
            try:
                first = calls.get(timeout=IDLE_S)
            except queue.Empty:  # idle (an app whose lifespan never ran closes nothing):
                with self._lock:  # the thread ends, unless a call just came
                    if self._queue is calls and calls.empty():
                        self._queue = self._thread = None
                        return
                continue
            if first is None:
                return
            batch = [first]
            ending = False
            while len(batch) < self._max:
                try:
                    more = calls.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    ending = True
                    break
                batch.append(more)
            self._run(batch)
            if ending:
                return

    def _run(self, batch: list[_Call]) -> None:
        try:
            outcomes = self._runner([fn for _, _, fn in batch])
        except BaseException as exc:  # the runner itself failed: every call gets it
            outcomes = [(None, exc)] * len(batch)
        if len(outcomes) != len(batch):
            wrong = RuntimeError(f"{len(outcomes)} outcomes for {len(batch)} calls")
            outcomes = [(None, wrong)] * len(batch)
        self.batches += 1
        self.calls += len(batch)
        by_loop: dict[asyncio.AbstractEventLoop, list[_Settled]] = {}
        for (loop, future, _), (value, error) in zip(batch, outcomes, strict=True):
            by_loop.setdefault(loop, []).append((future, value, error))
        for loop, items in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle_all, items)

    def close(self, timeout: float = 30.0) -> None:
        """Run the calls queued so far, then end the thread (waiting up to ``timeout``)."""
        with self._lock:
            calls, thread = self._queue, self._thread
            self._queue = self._thread = None
            if calls is not None:
                calls.put(None)
        if thread is not None:
            thread.join(timeout)


class Calls:
    """Where a request's blocking calls run, by the path the app serves.

    Fast: where the storage's reads are local (:attr:`Storage.local_reads`), the
    calls that only read run on the event loop; the others take one of the hub's own
    :class:`Workers`, and the small writes of the PUTs go to the committer
    (:class:`Batcher`) where the metadata and the blobs are local.  Plain: every
    call takes Starlette's ``run_in_threadpool``, as any Starlette app's would."""

    def __init__(self, store: Storage, fast: bool) -> None:
        #: the reads that may run on the event loop do
        self.loop_reads = fast and store.local_reads
        #: ... and so do those that read a blob too
        self.loop_blob_reads = self.loop_reads and store.blobs.local
        self._workers = Workers() if fast else None
        # one committer thread runs the writes queued together in one transaction
        runner = store.batch_runner() if self.loop_blob_reads else None
        self.committer = Batcher(runner) if runner is not None else None

    async def run(self, on_loop: bool, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the event loop, or in a thread (a hop: ~8 µs of CPU fast)."""
        if on_loop:
            return fn(*args)
        if self._workers is None:
            return await run_in_threadpool(fn, *args)
        return await self._workers.run(fn, *args)

    async def write(self, fn: Callable[[], T], batched: bool) -> T:
        """A write checked on the loop: in the committer's next batch if ``batched``
        and there is one, else in a thread of its own."""
        if batched and self.committer is not None:
            return await self.committer.run(fn)
        return await self.run(False, fn)

    async def close(self) -> None:
        """Run and answer the writes queued, then end the threads."""
        if self.committer is not None:
            await asyncio.to_thread(self.committer.close)
        if self._workers is not None:
            self._workers.close()
