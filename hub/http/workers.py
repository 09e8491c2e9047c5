"""The fast path's threads: the blocking calls of a request (writes and their fsyncs,
a networked backend) run here, off the event loop.

Starlette's ``run_in_threadpool`` (anyio's worker threads) cost 28-60 µs of CPU a
call on this machine: a capacity limiter, a cancel scope, a context copy, a worker
looked up per call.  :class:`Workers` is what the hub needs of it: up to ``size``
threads, started when a call finds none idle and ended after :data:`IDLE_S` without
work (as anyio's), one ``SimpleQueue`` and the answer handed back with one
``call_soon_threadsafe`` (~8 µs a call; ``loop.run_in_executor`` costs ~20 µs and
keeps its threads for the life of the process).  As with anyio, a call whose
awaiting task is cancelled still runs to its end (a write is never cut in half).

Even so a hop costs a quiet hub more CPU than an SQLite read of local files (a
worker woken, the answer handed back, the GIL passed twice).  :class:`Pace` lets the
fast path read local storage on the loop while the loop keeps up, and sends those
calls to the workers once it lags: on a machine short of CPU the loop is one thread
among many, and a read on it holds up every other request
(``tests/bench/bench_hub.py --paths fast plain --burn 2``).

The plain path takes ``run_in_threadpool``: :func:`thread_runner` hands out one or
the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

__all__ = ["IDLE_S", "LATE_S", "TICK_S", "WORKERS", "Pace", "Run", "Workers", "thread_runner"]

T = TypeVar("T")

#: threads, as many as anyio's default capacity (requests blocked at once)
WORKERS = 40
#: a thread with no work for this long ends
IDLE_S = 10.0
#: the loop's pace is taken every TICK_S; it keeps up while a tick is at most LATE_S late
TICK_S = 0.05
LATE_S = 0.005

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


class Pace:
    """Whether the event loop keeps up (never, unless ``enabled``: the fast path over
    local storage): its last tick came at most :data:`LATE_S` late for want of CPU.

    A tick late because the loop was running (a busy hub on a quiet machine) does not
    count; the time the loop's thread spent neither running nor waiting for the tick
    does (other processes had the cores, or other threads the GIL).  Nor does the tick
    see one call that holds the loop (its time is the loop's CPU): :meth:`call` times
    each, and one longer than :data:`LATE_S` sends the calls to threads until the tick
    after next, so that a client whose reads are slow (many manifests, a large chunk)
    does not hold up every other request."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.late = 0.0  # seconds the last tick came late, less the loop's CPU time
        self.held = 0.0  # the longest call on the loop since the last tick

    @property
    def keeping_up(self) -> bool:
        return self.enabled and self.late <= LATE_S

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the loop, timed."""
        started = time.perf_counter()
        try:
            return fn(*args)
        finally:
            held = time.perf_counter() - started
            self.held = max(self.held, held)
            if held > LATE_S:
                self.late = held

    async def watch(self) -> None:
        """Take the pace until cancelled (a task of the app's lifespan)."""
        loop = asyncio.get_running_loop()
        while True:
            due, cpu = loop.time() + TICK_S, time.thread_time()
            await asyncio.sleep(TICK_S)
            late = loop.time() - due - (time.thread_time() - cpu)
            self.late, self.held = max(late, self.held), 0.0


#: runs ``fn(*args)`` in a thread and hands its result (or exception) to the loop
Run = Callable[..., Awaitable[Any]]


def thread_runner(fast: bool) -> tuple[Run, Callable[[], None]]:
    """(run, close): the hub's own :class:`Workers` (fast), or Starlette's thread pool."""
    if not fast:
        return run_in_threadpool, lambda: None
    workers = Workers()
    return workers.run, workers.close
