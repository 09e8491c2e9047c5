"""The hub's endpoints: a handler of :mod:`~sealmem.hub.http.routes` behind its edge
(the gate, the body read within its limit); the change feed's long poll,
``/healthz`` and ``/metrics``.

Every blocking call (the gate, a handler, a read of the change feed) takes a thread
(:mod:`~sealmem.hub.http.workers`), except that on the fast path over local storage
the gate and the handlers that only read run on the event loop while it keeps up; a
write never does.  A signed route's endpoint is an ASGI app over
``scope["path_params"]``, called by the front's direct table or Starlette's router.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ...protocol import hubapi
from ..config import HubConfig
from ..errors import Refusal
from ..storage import Storage, StorageError
from .edge import BodyReader, MetricsDoor, PollSlots, reserved, unless_gone
from .messages import Ctx, Json
from .metrics import CONTENT_TYPE, Metrics, resident_bytes
from .routes import Handler, Handlers
from .workers import Pace, Run

__all__ = ["Endpoints"]

log = logging.getLogger("sealmem.hub")

#: the readers' key of new teams' roster v1 uploads (no member is proven before the body)
_REGISTERING = "registering"
#: a client's float as Python writes it ("25.0", "0.912", "1.2e-05"), in ASCII only
_SECONDS = re.compile(r"[0-9.eE+-]{1,32}")


class Endpoints:
    """The endpoints of one app, over its handlers, storage and threads."""

    def __init__(
        self, config: HubConfig, store: Storage, handlers: Handlers, run: Run, pace: Pace
    ) -> None:
        self.config = config
        self.handlers = handlers
        self.run = run
        self.pace = pace
        self.feed = store.feed()
        self.metrics = Metrics()
        # signed bodies and unsigned join requests have readers of their own; of the
        # signed ones, a reserve for admins' rosters and keyrings (a revocation)
        reads = config.max_body_reads
        self.readers = {
            True: BodyReader(config, reads, reserved(reads)),
            False: BodyReader(config, config.max_join_reads),
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

    def wrap(
        self,
        handler: Handler,
        limit: int = 0,
        *,
        signed: bool = True,
        registering: bool = False,
        reads: bool = False,
        control: bool = False,
    ) -> _Endpoint:
        """An endpoint; with ``limit``, a body read only after the headers prove the
        request (the gate, before the body); a ``control`` upload (a roster or keyring)
        of an admin may take the readers' reserve.  A handler that ``reads`` only (a
        write it needs is left in ``ctx.later``) and the gate run on the loop while the
        :class:`Pace` keeps up, else each in a thread."""
        limit = min(limit, self.config.max_body_bytes)
        return _Endpoint(self, handler, limit, signed, registering, reads, control)

    async def changes(self, request: Request) -> Response:
        """``GET .../changes``: at once, or once the team changes within ``wait`` seconds."""
        ctx = Ctx(request.scope)
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
        return Json(self.metrics.disk.health())

    async def metrics_text(self, request: Request) -> Response:
        self.metrics_door.check(request.headers)
        text = await self.run(self.metrics.render)
        return Response(text, media_type=CONTENT_TYPE)


@dataclass(frozen=True, slots=True)
class _Endpoint:
    """A signed route's endpoint (see :meth:`Endpoints.wrap`): an ASGI app, as Starlette's
    router takes one that is not a function."""

    endpoints: Endpoints
    handler: Handler
    limit: int
    signed: bool
    registering: bool
    reads: bool
    control: bool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ctx = Ctx(scope)
        endpoints, signed = self.endpoints, self.signed
        run, gate, pace = endpoints.run, endpoints.handlers.gate, endpoints.pace
        on_loop = pace.keeping_up
        try:
            if self.limit:
                if signed and on_loop:
                    pace.call(gate, ctx, self.registering)
                elif signed:
                    await run(gate, ctx, self.registering)
                # a share of the readers per proven member (one for all registrations),
                # per client address for unsigned join requests
                proven = ctx.proven
                key = proven.signed.kid if proven is not None else _REGISTERING
                admin = self.control and proven is not None and proven.caller.admin
                bodies = endpoints.readers[signed]
                ctx.data = await bodies.read(
                    receive, ctx.headers, self.limit, key if signed else ctx.address,
                    reserve=admin,
                )  # fmt: skip
            if self.reads and on_loop:
                answer = pace.call(self.handler, ctx)
            else:
                answer = await run(self.handler, ctx)
        finally:
            scope["sealmem.kid"] = ctx.kid  # for the access log
            if ctx.later is not None:  # a write a read left: never on the loop
                await _later(run, ctx.later)
            if ctx.changed:
                endpoints.feed.notify(ctx.changed)
        await answer(scope, receive, send)


async def _later(run: Run, later: Callable[[], None]) -> None:
    """Run the write a read left (:attr:`Ctx.later`); its storage failing (a full disk)
    is the operator's to read in the log, and leaves the read's answer as it was."""
    try:
        await run(later)
    except StorageError as exc:
        log.warning("a write after a read was not done (tried again at the next read): %s", exc)


def _seconds(raw: str) -> float:
    """``raw`` as seconds, or nan: float() alone takes '٣', '1_0', 'nan' and 'inf'."""
    try:
        return float(raw) if _SECONDS.fullmatch(raw) else math.nan
    except ValueError:
        return math.nan
