"""The hub's worker threads: the blocking calls of a request (writes and their
fsyncs, a networked backend) run here, off the event loop.

Starlette's ``run_in_threadpool`` (anyio's worker threads) cost ~60 µs of CPU a
call on this machine: a capacity limiter, a cancel scope, a context copy, a
worker looked up per call.  :class:`Workers` is what the hub needs of it: a
fixed set of threads started on first use, one queue (``SimpleQueue``, in C),
and the answer handed back to the loop with one ``call_soon_threadsafe``
(~8 µs a call, measured side by side).  As with anyio, a call whose awaiting
task is cancelled still runs to its end (a write is never cut in half); its
result is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["WORKERS", "Workers"]

T = TypeVar("T")

#: threads, as many as anyio's default capacity (requests blocked at once)
WORKERS = 40

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


class Workers:
    """A pool of ``size`` daemon threads running blocking calls for the event loop."""

    def __init__(self, size: int = WORKERS, name: str = "sealmem-hub-worker") -> None:
        self._size = size
        self._name = name
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread; its result or exception, on the loop."""
        if not self._threads:
            self._start()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put((loop, future, fn, args))
        return await future

    def _start(self) -> None:
        with self._lock:
            while len(self._threads) < self._size:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            loop, future, fn, args = job
            value: Any = None
            error: BaseException | None = None
            try:
                value = fn(*args)
            except BaseException as exc:  # handed to the awaiting task, as anyio does
                error = exc
            del job, fn, args
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle, future, value, error)
            del future, value, error

    def close(self) -> None:
        """Stop the threads once the calls queued before have run."""
        with self._lock:
            for _ in self._threads:
                self._queue.put(None)
            self._threads = []
