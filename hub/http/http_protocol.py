"""uvicorn's httptools protocol with bounds on the request head, answering in one write.

h11 refuses a request line and headers over ``h11_max_incomplete_event_size``;
httptools (llhttp) buffers a header value however long it grows.
:class:`BoundedHttpTools` counts the bytes of reads that leave a request's head
incomplete and answers 400 (and closes) past ``MAX_HEAD_BYTES``, as h11 does (a read
in which a head ends or begins is not counted, since where the head starts in it is
unknown: what is buffered stays under the bound plus one read).  A head must also be
complete within ``HEAD_TIMEOUT_S`` of its first byte, else the connection is closed
(uvicorn's keep-alive timeout covers only a connection that sends nothing).

uvicorn writes an answer's status line and headers, then its body: two system calls
and two TCP segments for a few hundred bytes, each write also running the receiving
side's network stack on the loopback.  :class:`OneWrite` holds the head until the
first body write (or a close, or the end of a ``HEAD`` answer) and sends both at
once: the bytes on the wire are the same.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

from . import server
from .server import MAX_HEAD_BYTES

__all__ = ["BoundedHttpTools", "OneWrite"]


class OneWrite:
    """One request's transport as its cycle sees it: the response head is held and
    written with the first piece of the body (one ``writelines``: uvloop sends the
    two buffers in one system call, without joining them)."""

    __slots__ = ("_cycle", "_head", "_headed", "_transport")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle) -> None:
        self._transport = transport
        self._cycle = cycle
        self._head: bytes | None = None
        self._headed = False  # the head was written (or is held)

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:  # the body after its head: both at once
            self._head = None
            self._transport.writelines((head, data))
        elif not self._headed and self._cycle.response_started:
            # the cycle's first write once the answer started is its head; a HEAD
            # answer writes no body after it, so its head goes out at once
            self._headed = True
            if self._cycle.scope["method"] == "HEAD":
                self._transport.write(data)
            else:
                self._head = data
        else:  # before the answer (100 Continue), or a later piece of a body
            self._transport.write(data)

    def close(self) -> None:
        if self._head is not None:  # what was held goes out before the close
            head, self._head = self._head, None
            self._transport.write(head)
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class BoundedHttpTools(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that refuses a request head over ``MAX_HEAD_BYTES``."""

    _in_head = True  # a connection starts by reading a request head
    _head_bytes = 0
    _heads_done = 0
    _head_timer: asyncio.TimerHandle | None = None

    def data_received(self, data: bytes) -> None:
        was_in_head, heads_done = self._in_head, self._heads_done
        if was_in_head and self._head_timer is None:
            self._head_timer = self.loop.call_later(server.HEAD_TIMEOUT_S, self._head_too_slow)
        super().data_received(data)
        if not was_in_head or self._heads_done != heads_done or self.transport.is_closing():
            return  # a head ended in this read: where another one starts in it is unknown
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self.logger.warning("Request head over %d bytes refused.", MAX_HEAD_BYTES)
            self.send_400_response("Request line and headers are too large.")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True  # the next read starts the next request's head
        self._head_bytes = 0

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._in_head and not self.transport.is_closing():
            self.logger.warning("Request head unfinished after %ss: closed", server.HEAD_TIMEOUT_S)
            self.transport.close()

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._stop_head_timer()
        self._in_head = False
        self._heads_done += 1
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle is not before:  # its task has not run yet
            cycle.transport = OneWrite(self.transport, cycle)  # type: ignore[assignment]
