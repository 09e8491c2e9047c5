"""The hub's endpoints: a handler of :mod:`~sealmem.hub.http.routes` behind its edge
(the gate, the body read within its limit), run in a thread; the change feed's long
poll, ``/healthz`` and ``/metrics``.

Every blocking call (the gate, a handler, a read of the change feed) takes a thread:
the hub's own :class:`~sealmem.hub.http.workers.Workers` on the fast path, Starlette's
``run_in_threadpool`` on the plain one.  On the fast path over local storage, the gate
and the handlers that only read run on the event loop while it keeps up
(:class:`~sealmem.hub.http.workers.Pace`); a write never does.

Each endpoint takes an :class:`~sealmem.hub.http.front.Exchange`: the front hands
one over on the fast path's direct routes, and :meth:`Endpoints.starlette` makes
one from a Starlette ``Request`` (the plain path, and every path the direct table
does not take).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from ...protocol import hubapi
from ..config import HubConfig
from ..errors import Refusal
from ..storage import Storage
from .edge import BodyPolicy, BodyReader, MetricsDoor, PollSlots, unless_gone
from .front import Endpoint, Exchange
from .messages import Ctx, Json, context
from .metrics import CONTENT_TYPE, Metrics, resident_bytes
from .routes import Handlers
from .workers import Pace, Run

__all__ = ["Endpoints"]

#: a client's float as Python writes it ("25.0", "0.912", "1.2e-05"), in ASCII only
_SECONDS = re.compile(r"[0-9.eE+-]{1,32}")


class Endpoints:
    """The endpoints of one app, over its handlers, storage and threads."""

    def __init__(
        self, config: HubConfig, store: Storage, handlers: Handlers, run: Run, pace: Pace
    ) -> None:
        self.config = config
        self.store = store
        self.handlers = handlers
        self.run = run
        self.pace = pace
        self.feed = store.feed()
        self.metrics = Metrics()
        # signed bodies and unsigned join requests have readers of their own
        self.readers = {
            True: self._reader(config.max_body_reads),
            False: self._reader(config.max_join_reads),
        }
        self.polls = PollSlots(config.max_polls_per_member)
        self.metrics_door = MetricsDoor(config.metrics_token)
        gauge, readers = self.metrics.gauge, self.readers
        gauge("sealmem_hub_teams", "Registered teams.", store.team_count)
        gauge("sealmem_hub_stored_bytes", "Bytes held for all teams.", store.total_usage)
        gauge("sealmem_hub_resident_memory_bytes", "Hub process RSS.", resident_bytes)
        gauge(
            "sealmem_hub_body_reads",
            "Signed request bodies being read.",
            lambda: readers[True].reading,
        )
        gauge("sealmem_hub_join_reads", "Join requests being read.", lambda: readers[False].reading)

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
        handler: Callable[[Ctx], Response],
        limit: int = 0,
        *,
        signed: bool = True,
        registering: bool = False,
        reads: bool = False,
    ) -> Endpoint:
        """An endpoint; with ``limit``, a body read only after the headers name a known
        key (the gate, before the body).  A handler that ``reads`` only (a write it
        needs is left in ``ctx.later``) and the gate run on the loop while the
        :class:`Pace` keeps up, else each in a thread."""
        limit = min(limit, self.config.max_body_bytes)
        bodies = self.readers[signed]
        run, gate, feed, pace = self.run, self.handlers.gate, self.feed, self.pace

        async def endpoint(exchange: Exchange) -> Response:
            ctx = context(exchange.scope, exchange.params)
            try:
                if limit:
                    if signed and pace.keeping_up:
                        gate(ctx, registering)
                    elif signed:
                        await run(gate, ctx, registering)
                    # unsigned join requests: at most a quarter of their readers per address
                    claimed = ctx.headers.get(hubapi.HEADER_KID) if signed else ctx.client
                    ctx.body = await bodies.read(exchange.receive, ctx.headers, limit, claimed)
                if reads and pace.keeping_up:
                    return handler(ctx)
                answer: Response = await run(handler, ctx)
                return answer
            finally:
                exchange.scope["sealmem.kid"] = ctx.kid
                if ctx.later is not None:  # a write a read left: never on the loop
                    await run(ctx.later)
                if ctx.changed:
                    feed.notify(ctx.changed)

        return endpoint

    @staticmethod
    def starlette(endpoint: Endpoint) -> Callable[[Request], Awaitable[Response]]:
        """``endpoint`` as a Starlette route's."""

        async def through_starlette(request: Request) -> Response:
            return await endpoint(Exchange(request.scope, request.receive, request.path_params))

        return through_starlette

    async def changes(self, request: Request) -> Response:
        """``GET .../changes``: at once, or once the team changes within ``wait`` seconds."""
        ctx = context(request.scope, request.path_params)
        run, handlers, feed = self.run, self.handlers, self.feed
        held: str | None = None  # the member whose long-poll slot this request holds
        try:
            wait = _seconds(request.query_params.get(hubapi.QUERY_WAIT, "0"))
            if not math.isfinite(wait):
                raise Refusal(400, hubapi.BAD_REQUEST, "query wait must be a number of seconds")
            wait = min(wait, self.config.long_poll_max_s)
            deadline = time.monotonic() + max(wait, 0.0)
            team, caller, since = await run(handlers.changes_caller, ctx)
            held = self.polls.take(caller.kid) if wait > 0 else None
            while True:
                event = feed.event(team)
                doc = await run(handlers.changes, team, caller, since)
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
        text = await self.run(self.metrics.render)
        return Response(text, media_type=CONTENT_TYPE)


def _seconds(raw: str) -> float:
    """``raw`` as seconds, or nan: float() alone takes '٣', '1_0', 'nan' and 'inf'."""
    try:
        return float(raw) if _SECONDS.fullmatch(raw) else math.nan
    except ValueError:
        return math.nan
