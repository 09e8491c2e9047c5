"""The hub's endpoints: a handler of :mod:`~sealmem.hub.http.routes` behind its edge
(the gate, the body read within its limit) and the threads its calls take; the
change feed's long poll, ``/healthz`` and ``/metrics``.

Each endpoint takes an :class:`~sealmem.hub.http.front.Exchange`: the front hands
one over on the fast path's direct routes, and :meth:`Endpoints.starlette` makes
one from a Starlette ``Request`` (the plain path, and every path the direct table
does not take).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.datastructures import URL, QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from ...protocol import hubapi
from ..config import HubConfig
from ..errors import Refusal
from ..storage import Storage
from .edge import BodyPolicy, BodyReader, MetricsDoor, PollSlots, unless_gone
from .front import Endpoint, Exchange
from .metrics import CONTENT_TYPE, Metrics, resident_bytes
from .routes import Blocking, Ctx, Handler, Handlers, Json
from .workers import Calls

__all__ = ["Endpoints"]

#: a client's float as Python writes it ("25.0", "0.912", "1.2e-05"), in ASCII only
_SECONDS = re.compile(r"[0-9.eE+-]{1,32}")


class Endpoints:
    """The endpoints of one app, over its handlers, storage and threads."""

    def __init__(self, config: HubConfig, store: Storage, handlers: Handlers, calls: Calls) -> None:
        self.config = config
        self.store = store
        self.handlers = handlers
        self.calls = calls
        self.feed = store.feed()
        self.metrics = Metrics()
        # signed bodies and unsigned join requests have readers of their own
        self.readers = {
            True: self._reader(config.max_body_reads),
            False: self._reader(config.max_join_reads),
        }
        self.polls = PollSlots(config.max_polls_per_member)
        self.metrics_door = MetricsDoor(config.metrics_token)
        self.metrics.gauges(self._gauges)

    def _reader(self, max_reads: int) -> BodyReader:
        config = self.config
        return BodyReader(
            BodyPolicy(
                idle_s=config.body_idle_s,
                grace_s=config.body_grace_s,
                min_rate=config.body_min_rate,
                max_reads=max_reads,
            )
        )

    def wrap(
        self,
        handler: Handler,
        limit: int = 0,
        *,
        signed: bool = True,
        registering: bool = False,
        reads: bool = False,
        blob_reads: bool = False,
        checks: bool = False,
    ) -> Endpoint:
        """An endpoint; with ``limit``, a body read only after the headers name a known key.

        Where :class:`Calls` lets reads run on the event loop, the gate (headers only:
        reads) and a handler that only ``reads`` run there, and one that reads a blob
        too (``blob_reads``) if the blobs are local files; writes and every call of a
        networked backend take a thread.  A handler with ``checks`` (a PUT)
        authenticates and checks on the loop and leaves its write
        (:class:`~sealmem.hub.http.routes.Blocking`) to :meth:`Calls.write` (the
        committer, where there is one: the writes that arrive together share one
        transaction and one hand-off back): that thread, which competes with the loop
        for the GIL at every SQLite call and fsync, does only the write."""
        limit = min(limit, self.config.max_body_bytes)
        bodies = self.readers[signed]
        calls, handlers, feed = self.calls, self.handlers, self.feed
        gate_on_loop = calls.loop_reads
        on_loop = calls.loop_blob_reads if blob_reads else (reads or checks) and calls.loop_reads

        async def endpoint(exchange: Exchange) -> Response:
            ctx = _context(exchange.scope, exchange.params)
            try:
                if limit:
                    if signed:
                        await calls.run(gate_on_loop, handlers.gate, ctx, registering)
                    # unsigned join requests: at most a quarter of their readers per address
                    claimed = ctx.headers.get(hubapi.HEADER_KID) if signed else ctx.client
                    ctx.body = await bodies.read(exchange.receive, ctx.headers, limit, claimed)
                    exchange.body_done = True
                try:
                    if not on_loop:  # the handler and the write it leaves: one hop
                        return await calls.run(False, _finish, handler, ctx)
                    answer = handler(ctx)
                    if isinstance(answer, Blocking):  # checked on the loop; the write: a hop
                        return await calls.write(answer.run, answer.batched)
                    return answer
                finally:
                    if ctx.later is not None:  # a write the handler left: never on the loop
                        await calls.run(False, ctx.later)
            finally:
                exchange.kid = ctx.kid
                if ctx.changed:
                    feed.notify(ctx.changed)

        return endpoint

    @staticmethod
    def starlette(endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
        """``endpoint`` as a Starlette route's: the member it names goes to the access log."""

        async def through_starlette(request: Request) -> Response:
            exchange = Exchange(request.scope, request.receive, request.path_params, False)
            try:
                return await endpoint(exchange)
            finally:
                request.scope["sealmem.kid"] = exchange.kid

        return through_starlette

    async def changes(self, request: Request) -> Response:
        """``GET .../changes``: at once, or once the team changes within ``wait`` seconds."""
        ctx = _context(request.scope, request.path_params)
        calls, handlers, feed = self.calls, self.handlers, self.feed
        held: str | None = None  # the member whose long-poll slot this request holds
        try:
            wait = _seconds(request.query_params.get(hubapi.QUERY_WAIT, "0"))
            if not math.isfinite(wait):
                raise Refusal(400, hubapi.BAD_REQUEST, "query wait must be a number of seconds")
            wait = min(wait, self.config.long_poll_max_s)
            deadline = time.monotonic() + max(wait, 0.0)
            team, caller, since = await calls.run(calls.loop_reads, handlers.changes_caller, ctx)
            held = self.polls.take(caller.kid) if wait > 0 else None
            while True:
                event = feed.event(team)
                doc = await calls.run(calls.loop_reads, handlers.changes, team, caller, since)
                remaining = deadline - time.monotonic()
                if doc["changes"] or remaining <= 0:
                    return Json(doc)
                if await unless_gone(request.receive, feed.wait(event, remaining)):
                    return Json(doc)  # the client left: its slot is free at once
        finally:
            self.polls.give(held)
            request.scope["sealmem.kid"] = ctx.kid

    async def healthz(self, request: Request) -> Response:
        return Json({"ok": True})

    async def metrics_text(self, request: Request) -> Response:
        self.metrics_door.check(request.headers)
        text = await self.calls.run(False, self.metrics.render)
        return Response(text, media_type=CONTENT_TYPE)

    def _gauges(self) -> dict[str, tuple[str, float]]:
        store = self.store
        return {
            "sealmem_hub_teams": ("Registered teams.", store.team_count()),
            "sealmem_hub_stored_bytes": ("Bytes held for all teams.", store.total_usage()),
            "sealmem_hub_resident_memory_bytes": ("Hub process RSS.", resident_bytes()),
            "sealmem_hub_body_reads": (
                "Signed request bodies being read.",
                self.readers[True].reading,
            ),
            "sealmem_hub_join_reads": ("Join requests being read.", self.readers[False].reading),
        }


def _seconds(raw: str) -> float:
    """``raw`` as seconds, or nan: float() alone takes '٣', '1_0', 'nan' and 'inf'."""
    try:
        return float(raw) if _SECONDS.fullmatch(raw) else math.nan
    except ValueError:
        return math.nan


def _finish(handler: Handler, ctx: Ctx) -> Response:
    """``handler`` and the write it leaves, in one go (in a thread)."""
    answer = handler(ctx)
    return answer.run() if isinstance(answer, Blocking) else answer


def _context(scope: Scope, params: Mapping[str, Any]) -> Ctx:
    """The request as the handlers see it, read straight from the ASGI scope."""
    target = scope.get("raw_path") or URL(scope=scope).path.encode()
    query = scope.get("query_string") or b""
    if query:
        target = target + b"?" + query
    client = scope.get("client")
    return Ctx(
        method=scope["method"],
        target=target.decode("latin-1"),
        params=params,
        query=dict(QueryParams(query)) if query else {},
        # as dict(request.headers): lowercase names, latin-1, a repeated name's first value
        headers={k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(scope["headers"])},
        body=b"",
        client=client[0] if client else "-",
    )
