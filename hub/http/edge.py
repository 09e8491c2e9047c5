"""The hub's HTTP edge: what a request must pass before the handlers see it.

A number in a path is any run of ASCII digits, parsed by :func:`number` (400 beyond
int64, never a 500 from a 5000-digit ``int()``).  A body is read (:class:`BodyReader`)
only after the gate proved the caller from the headers: the signature over the
digest header verified (:meth:`sealmem.hub.http.routes.Handlers.gate`), so a reader
is only ever held by a member's own key.  The JSON 500 and the connection
closed after an answer sent before the body was read are the front's.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable, Mapping

import anyio
from starlette.convertors import CONVERTOR_TYPES, StringConvertor, register_url_convertor
from starlette.types import Message, Receive

from ...protocol import hubapi
from ...protocol.errors import InputError
from ..config import HubConfig
from ..errors import Refusal

__all__ = [
    "BodyReader",
    "MetricsDoor",
    "PollSlots",
    "number",
    "per_key",
    "reserved",
    "route_path",
    "unless_gone",
]


_DIGITS = "sealmem_digits"


class _Digits(StringConvertor):
    """A path number as its text: any run of ASCII digits (``[0-9]`` is ASCII in ``re``)."""

    regex = "[0-9]+"


if _DIGITS not in CONVERTOR_TYPES:
    register_url_convertor(_DIGITS, _Digits())


def route_path(template: str) -> str:
    """``template`` with each ``{name:int}`` routed as text and parsed by :func:`number`."""
    return template.replace(":int}", f":{_DIGITS}}}")


def number(value: object, what: str) -> int:
    """A number from a path or query: ASCII digits within int64, else 400 ``bad-request``."""
    try:
        return hubapi.parse_number(str(value), what)
    except InputError as exc:
        raise Refusal(400, hubapi.BAD_REQUEST, str(exc)) from None


#: a member refused a long poll may retry after this many seconds
_POLL_RETRY_S = 5


def per_key(max_reads: int) -> int:
    """Bodies read at once for one key (a member proven by its signature, or one client
    address for join requests): a quarter of ``max_reads``, at least 1."""
    return max(max_reads // 4, 1)


def reserved(max_reads: int) -> int:
    """Of ``max_reads``, the readers kept for admins' roster and keyring uploads (so that
    a revocation is read while members' uploads fill the rest): an eighth."""
    return max_reads // 8


class BodyReader:
    """Request bodies within a limit (413, at once for a declared ``Content-Length``), a
    minimum rate (408 for a body that stalls or trickles) and a number of concurrent
    reads (503 ``busy`` with ``Retry-After`` when full).

    A body must keep coming: no wait longer than ``body_idle_s`` for its next piece,
    and after ``body_grace_s`` at least ``body_min_rate`` bytes per second on average.
    ``reserve`` readers are kept for the reads that may use them (:meth:`read`).
    """

    def __init__(self, config: HubConfig, max_reads: int, reserve: int = 0) -> None:
        self.config = config
        self.max_reads = max_reads
        self.reserve = reserve
        self._per_key = per_key(max_reads)
        self.reading = 0  # bodies being read now (one event loop: no lock needed)
        self._by_key: dict[str, int] = {}  # only keys with a read under way: bounded

    async def read(
        self,
        receive: Receive,
        headers: Mapping[str, str],
        limit: int,
        key: str | None = None,
        *,
        reserve: bool = False,
    ) -> bytes:
        """The body (``headers``: lowercase names); with ``key``, at most :func:`per_key`
        bodies of that key at once, so that one key cannot take every reader; only a
        read that may use the ``reserve`` (an admin's roster or keyring) takes the
        last readers."""
        declared = _content_length(headers)
        if declared is not None and declared > limit:
            raise _too_large(declared, limit)
        mine = self._by_key.get(key, 0) if key is not None else 0
        key_full = key is not None and mine >= self._per_key
        room = self.max_reads if reserve else self.max_reads - self.reserve
        if key_full or self.reading >= room:
            if key_full:
                busy = f"{mine} request bodies of this key"
            elif room < self.max_reads:
                busy = f"{self.reading} request bodies ({self.reserve} more are kept for admins'"
                busy += " roster and keyring uploads)"
            else:
                busy = f"{self.reading} request bodies"
            raise Refusal(
                503,
                hubapi.BUSY,
                f"the hub is reading {busy} already; retry in a second",
                retry_after=1,
            )
        self.reading += 1
        if key is not None:
            self._by_key[key] = mine + 1
        try:
            return await self._read(receive, limit)
        finally:
            self.reading -= 1
            if key is not None:
                left = self._by_key.pop(key, 1) - 1
                if left:
                    self._by_key[key] = left

    async def _read(self, receive: Receive, limit: int) -> bytes:
        config = self.config
        started = time.monotonic()
        parts: list[bytes] = []
        size = 0
        while True:
            # the next byte is due by the time the minimum rate asks for it
            due = started + config.body_grace_s + (size + 1) / config.body_min_rate
            wait = min(config.body_idle_s, due - time.monotonic())
            message: Message | None = None
            with anyio.move_on_after(max(wait, 0.0)):
                message = await receive()
            if message is None:
                parts.clear()
                raise Refusal(
                    408,
                    hubapi.SLOW_BODY,
                    f"the request body stalled or came slower than {config.body_min_rate} bytes/s "
                    f"({size} bytes in {time.monotonic() - started:.1f} s); send it again",
                )
            if message["type"] == "http.disconnect":
                raise Refusal(400, hubapi.BAD_REQUEST, "the client went away mid-body")
            part = message.get("body", b"")
            size += len(part)
            if size > limit:
                parts.clear()
                raise _too_large(size, limit)
            parts.append(part)
            if not message.get("more_body", False):
                return b"".join(parts)


class PollSlots:
    """Long polls under way, per member: at most ``per_member`` at once, so that one member
    (or one stolen key) cannot hold every connection the hub serves."""

    def __init__(self, per_member: int) -> None:
        self.per_member = per_member
        self._held: dict[str, int] = {}  # only members with a poll under way: bounded

    def take(self, key: str) -> str:
        """One slot of ``key`` (give it back with :meth:`give`); 429 ``rate-limited``
        when all are held."""
        mine = self._held.get(key, 0)
        if mine >= self.per_member:
            raise Refusal(
                429,
                hubapi.RATE_LIMITED,
                f"this member already waits for changes on {mine} requests, the most the "
                f"hub allows at once ({self.per_member}); retry when one of them answers",
                retry_after=_POLL_RETRY_S,
            )
        self._held[key] = mine + 1
        return key

    def give(self, key: str | None) -> None:
        """Give back a slot :meth:`take` returned (None: no slot was taken)."""
        if key is None:
            return
        left = self._held.pop(key, 1) - 1
        if left:
            self._held[key] = left


async def unless_gone(receive: Receive, waiting: Awaitable[object]) -> bool:
    """Await ``waiting`` unless the client disconnects first; True when it did.

    For a request whose body was read (or that has none): a long poll must not hold
    its member's slot, nor its connection's task, for a client that left.
    """
    gone = False
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            nonlocal gone
            message = await receive()
            while message["type"] != "http.disconnect":  # the (empty) body: wait on
                message = await receive()
            gone = True
            group.cancel_scope.cancel()

        group.start_soon(watch)
        await waiting
        group.cancel_scope.cancel()
    return gone


class MetricsDoor:
    """Who may read ``/metrics``: nobody without a token, else only its bearer (storage
    counts and request rates are nobody else's business)."""

    def __init__(self, token: str | None) -> None:
        self._token = None if token is None else token.encode()

    def check(self, headers: Mapping[str, str]) -> None:
        if self._token is None:
            raise Refusal(
                404,
                hubapi.NOT_FOUND,
                "metrics are off on this hub; its operator turns them on with "
                "'sealmem hub serve --metrics-token' (or SEALMEM_HUB_METRICS_TOKEN)",
            )
        scheme, _, given = headers.get("authorization", "").partition(" ")
        presented = given.strip().encode("latin-1", "replace")  # the bytes sent
        if scheme.lower() != "bearer" or not hmac.compare_digest(presented, self._token):
            raise Refusal(
                401,
                hubapi.BAD_AUTH_HEADER,
                "metrics need 'Authorization: Bearer <the hub's metrics token>' "
                "(Prometheus: authorization.credentials_file)",
            )


def _content_length(headers: Mapping[str, str]) -> int | None:
    raw = headers.get("content-length")
    if raw is None:
        return None
    return number(raw.strip(), "Content-Length")


def _too_large(size: int, limit: int) -> Refusal:
    return Refusal(
        413,
        hubapi.TOO_LARGE,
        f"the request body is at least {size} bytes; this endpoint accepts at most {limit}",
    )
