"""A TCP proxy on 127.0.0.1 that loses a seeded fraction of the hub's responses.

Between real clients and a real hub: each read of the hub's answer is, with probability
``rate``, cut off (half of it sent, then the connection closed: a truncated body) or reset
(the connection aborted, nothing sent).  The request has reached the hub by then, so a
lost answer is one whose effect is unknown to the client, as on a flaky network.
``only`` (a regex on the request line) limits the losses to the answers of some requests.
With ``requests=True`` the proxy loses requests instead: a matching request is cut off
before the hub sees it (the client has sent it, so its effect is unknown to the client too).
``most`` bounds the number of losses.
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

__all__ = ["FaultProxy", "fault_proxy"]


class FaultProxy:
    def __init__(
        self,
        upstream_port: int,
        rate: float,
        seed: int,
        only: str = "",
        requests: bool = False,
        most: int | None = None,
    ) -> None:
        self.upstream_port = upstream_port
        self.most = most
        self.requests = requests
        self.only = re.compile(only.encode())
        self.rate = rate
        self.random = random.Random(seed)
        self.faults = 0
        self.port = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._open: set[asyncio.StreamWriter] = set()

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        asked: list[bytes],
        faulty: bool,
        down: asyncio.StreamWriter,
    ) -> None:
        try:
            while data := await reader.read(65536):
                if not faulty and data.startswith((b"GET ", b"PUT ", b"POST ", b"DELETE ")):
                    asked[:] = [data.split(b"\r\n", 1)[0]]
                    matches = self.only.search(asked[0]) is not None
                    if self.requests and matches and self._draw():
                        self.faults += 1
                        down.transport.abort()  # the client's side: it sent the request
                        return
                lose = faulty and not self.requests and asked
                lose = lose and self.only.search(asked[0]) is not None
                if lose and self._draw():
                    self.faults += 1
                    if self.random.random() < 0.5:
                        writer.write(data[: len(data) // 2])
                        await writer.drain()
                        writer.close()
                    else:
                        writer.transport.abort()
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with suppress(Exception):
                writer.close()

    def _draw(self) -> bool:
        """Whether to lose this one (at ``rate``, while fewer than ``most`` were lost)."""
        if self.most is not None and self.faults >= self.most:
            return False
        return self.random.random() < self.rate

    async def _serve(self, down_r: asyncio.StreamReader, down_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            down_w.transport.abort()
            return
        self._open |= {down_w, up_w}
        asked: list[bytes] = []  # the request line the hub answers now
        try:
            await asyncio.gather(
                self._pipe(down_r, up_w, asked, False, down_w),
                self._pipe(up_r, down_w, asked, True, down_w),
            )
        finally:
            self._open -= {down_w, up_w}
            up_w.transport.abort()
            down_w.transport.abort()

    async def _main(self, started: threading.Event, stop: asyncio.Event) -> None:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        started.set()
        async with server:
            await stop.wait()
            for writer in list(self._open):  # the pipes end on their own: nothing cancelled
                writer.transport.abort()
            await asyncio.gather(*self._tasks, return_exceptions=True)


@contextmanager
def fault_proxy(
    upstream_port: int,
    rate: float,
    seed: int,
    only: str = "",
    requests: bool = False,
    most: int | None = None,
) -> Iterator[FaultProxy]:
    """Run a :class:`FaultProxy` on its own thread and event loop for the ``with`` body."""
    proxy = FaultProxy(upstream_port, rate, seed, only, requests, most)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    stop = asyncio.Event()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(proxy._main(started, stop),), daemon=True
    )
    thread.start()
    assert started.wait(10), "the fault proxy did not start"
    try:
        yield proxy
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        loop.close()
