"""The hub as a Starlette app: routes, error bodies, access log and metrics.

:func:`create_app` wires a :class:`~sealmem.hub.config.HubConfig` and a
:class:`~sealmem.hub.storage.Storage` (opened from the config's URLs, SQLite
and a blob directory by default) into an ASGI app.  While it runs, a janitor
task deletes chunks no manifest names once ``unreferenced_ttl_s`` old, then
blobs no row names once ``orphan_min_age_s`` old (never younger: another
replica may be writing them).
Refusals become ``{"error": code, "detail": sentence}`` with their status;
every response carries the hub clock in ``Sealmem-Hub-Time`` so a client can
tell a skewed clock from a bad signature.  The access log (logger
``sealmem.hub.access``) records method, route template, status, duration and
member id: no bodies, no query strings, no ids in paths, no secrets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..protocol import hubapi
from ..protocol.invite import MAX_JOIN_BYTES
from ..protocol.manifest import MAX_CHUNK_BYTES
from ..protocol.verify import MAX_KEYRING_BYTES, MAX_MANIFEST_BYTES
from .auth import Authenticator, ReplayGuard
from .backends import open_storage
from .config import HubConfig
from .edge import BodyPolicy, BodyReader, Edge, MetricsDoor, PollSlots, route_path, unless_gone
from .errors import Refusal
from .metrics import CONTENT_TYPE, Metrics, resident_bytes
from .routes import Ctx, Handler, Handlers, Json
from .storage import QuotaExceeded, Storage, StorageError
from .teams import Teams

__all__ = ["AccessLog", "create_app", "run_janitor"]

T = TypeVar("T")

access_log = logging.getLogger("sealmem.hub.access")
log = logging.getLogger("sealmem.hub")


#: a client's float as Python writes it ("25.0", "0.912", "1.2e-05"), in ASCII only
_SECONDS = re.compile(r"[0-9.eE+-]{1,32}")


def _seconds(raw: str) -> float:
    """``raw`` as seconds, or nan: float() alone takes '٣', '1_0', 'nan' and 'inf'."""
    try:
        return float(raw) if _SECONDS.fullmatch(raw) else math.nan
    except ValueError:
        return math.nan


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class AccessLog:
    """ASGI middleware: one log line and one metrics sample per request."""

    def __init__(self, app: ASGIApp, metrics: Metrics, clock: Callable[[], int]) -> None:
        self.app = app
        self.metrics = metrics
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers", []))
                headers.append((hubapi.HEADER_HUB_TIME.encode(), str(self.clock()).encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            seconds = time.perf_counter() - started
            route = scope.get("route")
            template = getattr(route, "name", None) or "unmatched"
            self.metrics.observe(template, scope["method"], status, seconds)
            if access_log.isEnabledFor(logging.INFO):
                # the record made here: Logger.info would walk the stack for a caller
                # (file, line) that the access log never prints, on every request
                access_log.handle(
                    access_log.makeRecord(
                        access_log.name, logging.INFO, __file__, 0,
                        "%s %s %d %.1fms member=%s",
                        (scope["method"][:8], template, status, seconds * 1000,
                         scope.get("sealmem.kid") or "-"),
                        None,
                    )
                )  # fmt: skip


def create_app(
    config: HubConfig,
    storage: Storage | None = None,
    *,
    clock: Callable[[], int] | None = None,
) -> Starlette:
    """The hub app; it owns ``storage`` (opened from the config's URLs if not given)."""
    tick = clock or _now_ms
    store: Storage = (
        storage
        if storage is not None
        else open_storage(config.metadata_url, config.blobs_url, config.quota)
    )
    teams = Teams(store, manifests_kept=config.manifests_kept)
    guard = ReplayGuard(config.replay_window_ms, store)
    auth = Authenticator(store, guard, tick, request_ttl_ms=config.request_ttl_ms)
    handlers = Handlers(config, store, teams, auth, tick)
    metrics = Metrics()
    feed = store.feed()

    def reader(max_reads: int) -> BodyReader:
        return BodyReader(
            BodyPolicy(
                idle_s=config.body_idle_s,
                grace_s=config.body_grace_s,
                min_rate=config.body_min_rate,
                max_reads=max_reads,
            )
        )

    # signed bodies and unsigned join requests have readers of their own
    readers = {True: reader(config.max_body_reads), False: reader(config.max_join_reads)}
    polls = PollSlots(config.max_polls_per_member)
    metrics_door = MetricsDoor(config.metrics_token)

    local = store.local_reads

    async def call(on_loop: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn`` on the event loop, or in the thread pool (a hop: ~80 µs of CPU)."""
        if on_loop:
            return fn(*args, **kwargs)
        return await run_in_threadpool(fn, *args, **kwargs)

    def wrap(
        handler: Handler,
        limit: int = 0,
        *,
        signed: bool = True,
        registering: bool = False,
        reads: bool = False,
    ) -> Callable[[Request], Any]:
        """An endpoint; with ``limit``, a body read only after the headers name a known key.

        Where the storage's reads are local (:attr:`Storage.local_reads`), the gate
        (headers only: reads) and a handler that only ``reads`` run on the event loop;
        writes, blob reads and every call of a networked backend take the thread pool."""
        limit = min(limit, config.max_body_bytes)
        bodies = readers[signed]
        on_loop = reads and local

        async def endpoint(request: Request) -> Response:
            ctx = _context(request, b"")
            try:
                if limit:
                    if signed:
                        await call(local, handlers.gate, ctx, registering=registering)
                    # unsigned join requests: at most a quarter of their readers per address
                    claimed = ctx.headers.get(hubapi.HEADER_KID) if signed else ctx.client
                    ctx.body = await bodies.read(request, limit, claimed)
                return await call(on_loop, handler, ctx)
            finally:
                request.scope["sealmem.kid"] = ctx.kid
                if ctx.changed:
                    feed.notify(ctx.changed)

        return endpoint

    async def changes(request: Request) -> Response:
        ctx = _context(request, b"")
        held: str | None = None  # the member whose long-poll slot this request holds
        try:
            wait = _seconds(request.query_params.get(hubapi.QUERY_WAIT, "0"))
            if not math.isfinite(wait):
                raise Refusal(400, hubapi.BAD_REQUEST, "query wait must be a number of seconds")
            wait = min(wait, config.long_poll_max_s)
            deadline = time.monotonic() + max(wait, 0.0)
            team, caller, since = await call(local, handlers.changes_caller, ctx)
            held = polls.take(caller.kid) if wait > 0 else None
            while True:
                event = feed.event(team)
                doc = await call(local, handlers.changes, team, caller, since)
                remaining = deadline - time.monotonic()
                if doc["changes"] or remaining <= 0:
                    return Json(doc)
                if await unless_gone(request.receive, feed.wait(event, remaining)):
                    return Json(doc)  # the client left: its slot is free at once
        finally:
            polls.give(held)
            request.scope["sealmem.kid"] = ctx.kid

    async def healthz(request: Request) -> Response:
        return Json({"ok": True})

    def gauges() -> dict[str, tuple[str, float]]:
        return {
            "sealmem_hub_teams": ("Registered teams.", store.team_count()),
            "sealmem_hub_stored_bytes": ("Bytes held for all teams.", store.total_usage()),
            "sealmem_hub_resident_memory_bytes": ("Hub process RSS.", resident_bytes()),
            "sealmem_hub_body_reads": ("Signed request bodies being read.", readers[True].reading),
            "sealmem_hub_join_reads": ("Join requests being read.", readers[False].reading),
        }

    metrics.gauges(gauges)

    async def metrics_text(request: Request) -> Response:
        metrics_door.check(request.headers)
        text = await run_in_threadpool(metrics.render)
        return Response(text, media_type=CONTENT_TYPE)

    def route(template: str, endpoint: Callable[[Request], Any], method: str) -> Route:
        # named by its hubapi template: the access log's and the metrics' route label
        return Route(route_path(template), endpoint, methods=[method], name=template)

    join = min(config.max_join_bytes, MAX_JOIN_BYTES)
    # Starlette tries routes in order (a regex each): the sync cycle's come first
    routes = [
        route(hubapi.CHUNK, wrap(handlers.get_chunk), "GET"),
        route(hubapi.CHUNK, wrap(handlers.put_chunk, MAX_CHUNK_BYTES), "PUT"),
        route(hubapi.MANIFEST, wrap(handlers.put_manifest, MAX_MANIFEST_BYTES), "PUT"),
        route(hubapi.WRITER_MANIFESTS, wrap(handlers.get_manifests, reads=True), "GET"),
        route(hubapi.SEQS, wrap(handlers.get_seqs, reads=True), "GET"),
        route(hubapi.CHANGES, changes, "GET"),
        route(hubapi.MANIFESTS, wrap(handlers.get_manifests, reads=True), "GET"),
        route(hubapi.HEALTHZ, healthz, "GET"),
        route(hubapi.METRICS, metrics_text, "GET"),
        route(hubapi.ROSTERS, wrap(handlers.get_rosters, reads=True), "GET"),
        route(
            hubapi.ROSTER,
            wrap(handlers.put_roster, hubapi.MAX_ROSTER_PUBLISH_BYTES, registering=True),
            "PUT",
        ),
        route(hubapi.KEYRINGS, wrap(handlers.get_keyrings, reads=True), "GET"),
        route(hubapi.KEYRING, wrap(handlers.put_keyring, MAX_KEYRING_BYTES), "PUT"),
        route(hubapi.REQUESTS, wrap(handlers.get_requests, reads=True), "GET"),
        route(hubapi.REQUEST, wrap(handlers.post_request, join, signed=False), "POST"),
        route(hubapi.REQUEST, wrap(handlers.get_request, reads=True), "GET"),
        route(hubapi.REQUEST, wrap(handlers.delete_request), "DELETE"),
        route(hubapi.COLLECT, wrap(handlers.collect, hubapi.MAX_COLLECT_BYTES), "POST"),
    ]

    async def refused(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, Refusal):  # pragma: no cover - registered for Refusal only
            raise exc
        metrics.error(exc.code)
        headers = (
            None if exc.retry_after is None else {hubapi.HEADER_RETRY_AFTER: str(exc.retry_after)}
        )
        return Json(exc.body(), exc.status, headers=headers)

    async def storage_failed(request: Request, exc: Exception) -> Response:
        log.error("storage failure: %s", exc)
        metrics.error(hubapi.STORAGE)
        body = {"error": hubapi.STORAGE, "detail": "the hub could not read or write its storage"}
        return Json(body, 503)

    async def over_quota(request: Request, exc: Exception) -> Response:
        metrics.error(hubapi.QUOTA_EXCEEDED)
        return Json({"error": hubapi.QUOTA_EXCEEDED, "detail": str(exc)}, 507)

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code = {404: hubapi.NOT_FOUND, 405: hubapi.BAD_METHOD}.get(status, hubapi.BAD_REQUEST)
        metrics.error(code)
        body = {"error": code, "detail": f"no such hub endpoint or method (HTTP {status})"}
        return Json(body, status)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await feed.start()
        task = asyncio.create_task(_janitor(store, config, tick), name="sealmem-hub-janitor")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await feed.close()
            store.close()

    app = Starlette(
        routes=routes,
        exception_handlers={
            Refusal: refused,
            QuotaExceeded: over_quota,
            StorageError: storage_failed,
            HTTPException: http_error,
        },
        lifespan=lifespan,
    )
    app.add_middleware(Edge)  # inside the access log, so that its 500s are counted
    app.add_middleware(AccessLog, metrics=metrics, clock=tick)
    app.state.storage = store
    app.state.teams = teams
    return app


def run_janitor(
    store: Storage, config: HubConfig, now_ms: int, *, orphans: bool = True
) -> tuple[int, int]:
    """One pass: chunks no kept manifest names past their TTL, then (if ``orphans``)
    blobs no row names past the minimum age."""
    expired = store.expire_unreferenced(now_ms - int(config.unreferenced_ttl_s * 1000))
    collected = store.collect_orphans(config.orphan_min_age_s) if orphans else 0
    if expired or collected:
        log.info("janitor: %d unreferenced chunk(s) expired, %d orphan blob(s) collected",
                 expired, collected)  # fmt: skip
    return expired, collected


async def _janitor(store: Storage, config: HubConfig, clock: Callable[[], int]) -> None:
    """Run :func:`run_janitor` every ``janitor_interval_s`` (first after one interval);
    the orphan pass walks every blob, so it runs only every half minimum age."""
    next_walk = time.monotonic() + config.orphan_min_age_s / 2
    while True:
        await asyncio.sleep(config.janitor_interval_s)
        walk = time.monotonic() >= next_walk
        try:
            await run_in_threadpool(run_janitor, store, config, clock(), orphans=walk)
        except StorageError as exc:
            log.error("janitor: storage failure: %s", exc)
        except Exception:  # a bug must not end the janitor until the next restart
            log.exception("janitor: unexpected error; the next pass runs as planned")
        if walk:
            next_walk = time.monotonic() + config.orphan_min_age_s / 2


def _context(request: Request, body: bytes) -> Ctx:
    """The request as the handlers see it, read straight from the ASGI scope."""
    scope = request.scope
    target = scope.get("raw_path") or request.url.path.encode()
    query = scope.get("query_string") or b""
    if query:
        target = target + b"?" + query
    client = scope.get("client")
    return Ctx(
        method=scope["method"],
        target=target.decode("latin-1"),
        params=scope.get("path_params", {}),
        query=dict(request.query_params) if query else {},
        # as dict(request.headers): lowercase names, latin-1, a repeated name's first value
        headers={k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(scope["headers"])},
        body=body,
        client=client[0] if client else "-",
    )
