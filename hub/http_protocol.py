"""uvicorn's httptools protocol with a bound on the request head.

h11 refuses a request line and headers over ``h11_max_incomplete_event_size``;
httptools (llhttp) has no such bound and buffers a header value however long
it grows.  :class:`BoundedHttpTools` counts the bytes of reads that leave a
request's head incomplete and answers 400 (and closes) once they pass
``MAX_HEAD_BYTES``, as h11 does (h11 too bounds only a head still incomplete:
one read that holds a whole head is parsed).  A read in which a head ends or
begins is not counted, since where the head starts in it is unknown: what is
buffered stays under the bound plus one read.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .server import MAX_HEAD_BYTES

__all__ = ["BoundedHttpTools"]


class BoundedHttpTools(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that refuses a request head over ``MAX_HEAD_BYTES``."""

    _in_head = True  # a connection starts by reading a request head
    _head_bytes = 0
    _heads_done = 0

    def data_received(self, data: bytes) -> None:
        was_in_head, heads_done = self._in_head, self._heads_done
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

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._heads_done += 1
        super().on_headers_complete()
