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
import functools
import logging
import math
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import URL, QueryParams
from starlette.exceptions import HTTPException
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Scope

from ..protocol import hubapi
from ..protocol.invite import MAX_JOIN_BYTES
from ..protocol.manifest import MAX_CHUNK_BYTES
from ..protocol.verify import MAX_KEYRING_BYTES, MAX_MANIFEST_BYTES
from .auth import Authenticator, ReplayGuard
from .config import HubConfig
from .edge import BodyPolicy, BodyReader, MetricsDoor, PollSlots, route_path, unless_gone
from .errors import Refusal
from .front import Answers, Direct, Endpoint, Exchange, Front, Routes
from .metrics import CONTENT_TYPE, Metrics, resident_bytes
from .routes import Blocking, Ctx, Handler, Handlers, Json
from .storage import QuotaExceeded, Storage, StorageError
from .storage.backends import open_storage
from .teams import Teams
from .workers import Batcher, Workers

__all__ = ["HubApp", "create_app", "run_janitor"]

T = TypeVar("T")

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


class HubApp(Starlette):
    """Starlette behind the hub's :class:`~sealmem.hub.front.Front`: the front is the
    outermost layer (it answers the unexpected with a JSON 500, so Starlette's own
    error middleware is not stacked), then the exception handlers and the router."""

    def __init__(self, front: Callable[[ASGIApp], Front], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._front = front

    def build_middleware_stack(self) -> ASGIApp:
        handlers = {k: v for k, v in self.exception_handlers.items() if k not in (500, Exception)}
        app: ASGIApp = ExceptionMiddleware(self.router, handlers=handlers, debug=self.debug)
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return self._front(app)


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

    workers = Workers()
    # the PUTs' writes, where the metadata and the blobs are local: one committer thread
    # runs those queued together in one transaction (hub/sqlite_group.py)
    runner = store.batch_runner() if local and store.blobs.local else None
    committer = Batcher(runner) if runner is not None else None

    async def call(on_loop: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn`` on the event loop, or in a worker thread (a hop: ~8 µs of CPU)."""
        if on_loop:
            return fn(*args, **kwargs)
        if kwargs:
            return await workers.run(functools.partial(fn, *args, **kwargs))
        return await workers.run(fn, *args)

    def wrap(
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

        Where the storage's reads are local (:attr:`Storage.local_reads`), the gate
        (headers only: reads) and a handler that only ``reads`` run on the event loop,
        and one that reads a blob too (``blob_reads``) if the blobs are local files
        (:attr:`BlobStore.local`); writes and every call of a networked backend take a
        worker thread.  A handler with ``checks`` (a PUT) authenticates and checks on
        the loop and leaves its write (:class:`~sealmem.hub.routes.Blocking`) to the
        committer where the metadata and blobs are local (the writes that arrive
        together share one transaction and one hand-off back), else to a worker thread:
        either thread, which competes with the loop for the GIL at every SQLite call
        and fsync, does only the write."""
        limit = min(limit, config.max_body_bytes)
        bodies = readers[signed]
        on_loop = (
            (reads or blob_reads or checks) and local and (not blob_reads or store.blobs.local)
        )

        async def endpoint(exchange: Exchange) -> Response:
            ctx = _context(exchange.scope, exchange.params)
            try:
                if limit:
                    if signed:
                        await call(local, handlers.gate, ctx, registering=registering)
                    # unsigned join requests: at most a quarter of their readers per address
                    claimed = ctx.headers.get(hubapi.HEADER_KID) if signed else ctx.client
                    ctx.body = await bodies.read(exchange.receive, ctx.headers, limit, claimed)
                    exchange.body_done = True
                try:
                    if not on_loop:  # the handler and the write it leaves: one hop
                        return await call(False, _finish, handler, ctx)
                    answer = handler(ctx)
                    if isinstance(answer, Blocking):  # checked on the loop; the write: a hop
                        if committer is not None and answer.batched:
                            return await committer.run(answer.run)
                        return await call(False, answer.run)
                    return answer
                finally:
                    if ctx.later is not None:  # a write the handler left: never on the loop
                        await call(False, ctx.later)
            finally:
                exchange.kid = ctx.kid
                if ctx.changed:
                    feed.notify(ctx.changed)

        return endpoint

    async def through_starlette(endpoint: Endpoint, request: Request) -> Response:
        """A direct endpoint where the front left the request to Starlette."""
        exchange = Exchange(request.scope, request.receive, request.path_params, False)
        try:
            return await endpoint(exchange)
        finally:
            request.scope["sealmem.kid"] = exchange.kid

    async def changes(request: Request) -> Response:
        ctx = _context(request.scope, request.path_params)
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
    # the signed routes: direct from the front (hub/front.py), and in Starlette's table
    direct = [
        Direct(hubapi.CHUNK, "GET", wrap(handlers.get_chunk, blob_reads=True)),
        Direct(hubapi.CHUNK, "PUT", wrap(handlers.put_chunk, MAX_CHUNK_BYTES, checks=True)),
        Direct(
            hubapi.MANIFEST, "PUT", wrap(handlers.put_manifest, MAX_MANIFEST_BYTES, checks=True)
        ),
        Direct(hubapi.WRITER_MANIFESTS, "GET", wrap(handlers.get_manifests, reads=True)),
        Direct(hubapi.SEQS, "GET", wrap(handlers.get_seqs, reads=True)),
        Direct(hubapi.MANIFESTS, "GET", wrap(handlers.get_manifests, reads=True)),
        Direct(hubapi.ROSTERS, "GET", wrap(handlers.get_rosters, reads=True)),
        Direct(
            hubapi.ROSTER,
            "PUT",
            wrap(handlers.put_roster, hubapi.MAX_ROSTER_PUBLISH_BYTES, registering=True),
        ),
        Direct(hubapi.KEYRINGS, "GET", wrap(handlers.get_keyrings, reads=True)),
        Direct(hubapi.KEYRING, "PUT", wrap(handlers.put_keyring, MAX_KEYRING_BYTES)),
        Direct(hubapi.REQUESTS, "GET", wrap(handlers.get_requests, reads=True)),
        Direct(hubapi.REQUEST, "POST", wrap(handlers.post_request, join, signed=False)),
        Direct(hubapi.REQUEST, "GET", wrap(handlers.get_request, reads=True)),
        Direct(hubapi.REQUEST, "DELETE", wrap(handlers.delete_request)),
        Direct(hubapi.COLLECT, "POST", wrap(handlers.collect, hubapi.MAX_COLLECT_BYTES)),
    ]
    # Starlette tries routes in order (a regex each): the sync cycle's come first
    routes = [
        *(route(d.template, functools.partial(through_starlette, d.endpoint), d.method)
          for d in direct[:5]),
        route(hubapi.CHANGES, changes, "GET"),
        *(route(d.template, functools.partial(through_starlette, d.endpoint), d.method)
          for d in direct[5:6]),
        route(hubapi.HEALTHZ, healthz, "GET"),
        route(hubapi.METRICS, metrics_text, "GET"),
        *(route(d.template, functools.partial(through_starlette, d.endpoint), d.method)
          for d in direct[6:]),
    ]  # fmt: skip

    answers = Answers(metrics)

    async def answer(request: Request, exc: Exception) -> Response:
        found = answers.of(exc)
        if found is None:  # pragma: no cover - registered for the refusals only
            raise exc
        return found

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
            if committer is not None:
                await asyncio.to_thread(committer.close)  # the writes queued: run, answered
            workers.close()
            store.close()

    app = HubApp(
        functools.partial(Front, routes=Routes(direct), answers=answers, clock=tick),
        routes=routes,
        exception_handlers={
            Refusal: answer,
            QuotaExceeded: answer,
            StorageError: answer,
            HTTPException: http_error,
        },
        lifespan=lifespan,
    )
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


def _finish(handler: Handler, ctx: Ctx) -> Response:
    """``handler`` and the write it leaves, in one go (in a worker thread)."""
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
