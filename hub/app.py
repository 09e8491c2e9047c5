"""The hub as a Starlette app: routes, error bodies, access log and metrics.

:func:`create_app` wires a :class:`~sealmem.hub.config.HubConfig` and a
:class:`~sealmem.hub.storage.Storage` (SQLite by default) into an ASGI app.
Refusals become ``{"error": code, "detail": sentence}`` with their status;
every response carries the hub clock in ``Sealmem-Hub-Time`` so a client can
tell a skewed clock from a bad signature.  The access log (logger
``sealmem.hub.access``) records method, route template, status, duration and
member id: no bodies, no query strings, no ids in paths, no secrets.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..protocol import hubapi
from ..protocol.invite import MAX_JOIN_BYTES
from ..protocol.manifest import MAX_CHUNK_BYTES
from ..protocol.verify import MAX_KEYRING_BYTES, MAX_MANIFEST_BYTES
from .auth import Authenticator, ReplayGuard
from .config import HubConfig
from .edge import BodyPolicy, BodyReader, Edge, route_path
from .errors import Refusal
from .feed import Feed
from .metrics import CONTENT_TYPE, Metrics, resident_bytes
from .routes import Ctx, Handler, Handlers
from .sqlite_storage import SQLiteStorage
from .storage import Storage, StorageError
from .teams import Teams

__all__ = ["AccessLog", "create_app"]

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
            access_log.info(
                "%s %s %d %.1fms member=%s",
                scope["method"][:8], template, status, seconds * 1000,
                scope.get("sealmem.kid") or "-",
            )  # fmt: skip


def create_app(
    config: HubConfig,
    storage: Storage | None = None,
    *,
    clock: Callable[[], int] | None = None,
) -> Starlette:
    """The hub app; it owns ``storage`` (opened from ``config.data_dir`` if not given)."""
    tick = clock or _now_ms
    store: Storage = storage if storage is not None else SQLiteStorage(config.data_dir)
    teams = Teams(store, manifests_kept=config.manifests_kept)
    guard = ReplayGuard(config.replay_window_ms)
    auth = Authenticator(store, guard, tick, request_ttl_ms=config.request_ttl_ms)
    handlers = Handlers(config, store, teams, auth, tick)
    metrics = Metrics()
    feed = Feed()

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

    def wrap(
        handler: Handler, limit: int = 0, *, signed: bool = True, registering: bool = False
    ) -> Callable[[Request], Any]:
        """An endpoint; with ``limit``, a body read only after the headers name a known key."""
        limit = min(limit, config.max_body_bytes)
        bodies = readers[signed]

        async def endpoint(request: Request) -> Response:
            ctx = _context(request, b"")
            try:
                if limit:
                    if signed:
                        await run_in_threadpool(handlers.gate, ctx, registering=registering)
                    ctx.body = await bodies.read(request, limit)
                return await run_in_threadpool(handler, ctx)
            finally:
                request.scope["sealmem.kid"] = ctx.kid
                if ctx.changed:
                    feed.notify(ctx.changed)

        return endpoint

    async def changes(request: Request) -> Response:
        ctx = _context(request, b"")
        try:
            wait = _seconds(request.query_params.get(hubapi.QUERY_WAIT, "0"))
            if not math.isfinite(wait):
                raise Refusal(400, hubapi.BAD_REQUEST, "query wait must be a number of seconds")
            wait = min(wait, config.long_poll_max_s)
            deadline = time.monotonic() + max(wait, 0.0)
            team, caller, since = await run_in_threadpool(handlers.changes_caller, ctx)
            while True:
                event = feed.event(team)
                doc = await run_in_threadpool(handlers.changes, team, caller, since)
                remaining = deadline - time.monotonic()
                if doc["changes"] or remaining <= 0:
                    return JSONResponse(doc)
                await feed.wait(event, remaining)
        finally:
            request.scope["sealmem.kid"] = ctx.kid

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

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
        text = await run_in_threadpool(metrics.render)
        return Response(text, media_type=CONTENT_TYPE)

    def route(template: str, endpoint: Callable[[Request], Any], method: str) -> Route:
        # named by its hubapi template: the access log's and the metrics' route label
        return Route(route_path(template), endpoint, methods=[method], name=template)

    join = min(config.max_join_bytes, MAX_JOIN_BYTES)
    routes = [
        route(hubapi.HEALTHZ, healthz, "GET"),
        route(hubapi.METRICS, metrics_text, "GET"),
        route(hubapi.ROSTERS, wrap(handlers.get_rosters), "GET"),
        route(
            hubapi.ROSTER,
            wrap(handlers.put_roster, hubapi.MAX_ROSTER_PUBLISH_BYTES, registering=True),
            "PUT",
        ),
        route(hubapi.KEYRINGS, wrap(handlers.get_keyrings), "GET"),
        route(hubapi.KEYRING, wrap(handlers.put_keyring, MAX_KEYRING_BYTES), "PUT"),
        route(hubapi.CHANGES, changes, "GET"),
        route(hubapi.REQUESTS, wrap(handlers.get_requests), "GET"),
        route(hubapi.REQUEST, wrap(handlers.post_request, join, signed=False), "POST"),
        route(hubapi.REQUEST, wrap(handlers.get_request), "GET"),
        route(hubapi.REQUEST, wrap(handlers.delete_request), "DELETE"),
        route(hubapi.SEQS, wrap(handlers.get_seqs), "GET"),
        route(hubapi.MANIFESTS, wrap(handlers.get_manifests), "GET"),
        route(hubapi.WRITER_MANIFESTS, wrap(handlers.get_manifests), "GET"),
        route(hubapi.MANIFEST, wrap(handlers.put_manifest, MAX_MANIFEST_BYTES), "PUT"),
        route(hubapi.CHUNK, wrap(handlers.get_chunk), "GET"),
        route(hubapi.CHUNK, wrap(handlers.put_chunk, MAX_CHUNK_BYTES), "PUT"),
        route(hubapi.COLLECT, wrap(handlers.collect, hubapi.MAX_COLLECT_BYTES), "POST"),
    ]

    async def refused(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, Refusal):  # pragma: no cover - registered for Refusal only
            raise exc
        metrics.error(exc.code)
        headers = (
            None if exc.retry_after is None else {hubapi.HEADER_RETRY_AFTER: str(exc.retry_after)}
        )
        return JSONResponse(exc.body(), exc.status, headers=headers)

    async def storage_failed(request: Request, exc: Exception) -> Response:
        log.error("storage failure: %s", exc)
        metrics.error(hubapi.STORAGE)
        body = {"error": hubapi.STORAGE, "detail": "the hub could not read or write its storage"}
        return JSONResponse(body, 503)

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code = {404: hubapi.NOT_FOUND, 405: hubapi.BAD_METHOD}.get(status, hubapi.BAD_REQUEST)
        metrics.error(code)
        body = {"error": code, "detail": f"no such hub endpoint or method (HTTP {status})"}
        return JSONResponse(body, status)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        removed = await run_in_threadpool(store.collect_orphans, 0.0)
        if removed:
            log.info("collected %d orphan blob(s) left by an interrupted write", removed)
        try:
            yield
        finally:
            store.close()

    app = Starlette(
        routes=routes,
        exception_handlers={
            Refusal: refused,
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


def _context(request: Request, body: bytes) -> Ctx:
    target = request.scope.get("raw_path") or request.url.path.encode()
    query = request.scope.get("query_string") or b""
    if query:
        target = target + b"?" + query
    return Ctx(
        method=request.method,
        target=target.decode("latin-1"),
        params=dict(request.path_params),
        query=dict(request.query_params),
        headers=dict(request.headers),
        body=body,
        client=request.client.host if request.client else "-",
    )
