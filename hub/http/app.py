"""The hub as a Starlette app behind its :class:`~sealmem.hub.http.front.Front`.

:func:`create_app` wires a :class:`~sealmem.hub.config.HubConfig` and a
:class:`~sealmem.hub.storage.Storage` (opened from the config's URLs, SQLite
and a blob directory by default) into an ASGI app.  While it runs, a janitor
task deletes chunks no manifest names once ``unreferenced_ttl_s`` old, then
blobs no row names once ``orphan_min_age_s`` old (never younger: another
replica may be writing them).

One switch, :attr:`HubConfig.fast`, picks the path a request takes.  Fast (the
default): the front's direct table, the hub's own threads (or the event loop, see
:class:`~sealmem.hub.http.workers.Pace`) and the storage's group commit.  Plain
(``sealmem hub serve --plain``): Starlette's router and ``run_in_threadpool``, one
transaction per write.  The same front stamps, logs and answers refusals on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ...protocol import hubapi
from ...protocol.checkpoint import MAX_CHECKPOINT_BYTES
from ...protocol.invite import MAX_JOIN_BYTES
from ...protocol.manifest import MAX_CHUNK_BYTES
from ...protocol.private_trust import MAX_TRUST_BYTES
from ...protocol.verify import MAX_KEYRING_BYTES, MAX_MANIFEST_BYTES
from ..auth import Authenticator, ReplayGuard
from ..config import HubConfig
from ..storage import Storage, StorageError
from ..storage.backends import open_storage
from ..storage.blobs import BlobDir
from ..storage.sqlite import SQLiteStorage
from ..teams import Teams
from .edge import route_path
from .endpoints import Endpoints
from .front import Front, Routes
from .messages import Json
from .metrics import Metrics
from .private_routes import PrivateHandlers
from .routes import Handlers
from .workers import Pace, thread_runner

__all__ = ["create_app", "run_janitor"]

log = logging.getLogger("sealmem.hub")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def create_app(
    config: HubConfig,
    storage: Storage | None = None,
    *,
    clock: Callable[[], int] | None = None,
) -> Starlette:
    """The hub app; it owns ``storage`` (opened from the config's URLs if not given)."""
    tick = clock or _now_ms
    # the storage's side of the switch: the fast path's writes share durable commits
    store = storage if storage is not None else open_storage(
        config.metadata_url, config.blobs_url, config.quota, group_commit=config.fast
    )  # fmt: skip
    teams = Teams(store, manifests_kept=config.manifests_kept)
    auth = Authenticator(
        store, ReplayGuard(config.replay_window_ms, store), tick,
        request_ttl_ms=config.request_ttl_ms,
    )  # fmt: skip
    run, close_threads = thread_runner(config.fast)
    # reads on the loop where they are of local files (see workers.Pace)
    local = isinstance(store, SQLiteStorage) and isinstance(store.blobs, BlobDir)
    pace = Pace(config.fast and local)
    handlers = Handlers(config, store, teams, auth, tick)
    endpoints = Endpoints(config, store, handlers, run, pace)
    direct = _direct(config, endpoints)
    routes = Routes(direct if config.fast else ())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await endpoints.feed.start()
        tasks = [asyncio.create_task(_janitor(store, config, tick), name="sealmem-hub-janitor")]
        if pace.enabled:
            tasks.append(asyncio.create_task(pace.watch(), name="sealmem-hub-pace"))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await endpoints.feed.close()
            close_threads()  # after the calls queued
            store.close()

    # the front inside Starlette's error middleware, which it leaves nothing to catch
    app = Starlette(
        routes=_routes(direct, endpoints),
        middleware=[Middleware(Front, routes=routes, metrics=endpoints.metrics, clock=tick)],
        exception_handlers={HTTPException: _http_error(endpoints.metrics)},
        lifespan=lifespan,
    )
    app.state.storage = store
    app.state.teams = teams
    return app


def _route(template: str, method: str, endpoint: Callable[..., Any]) -> Route:
    # named by its hubapi template: the access log's and the metrics' route label
    return Route(route_path(template), endpoint, methods=[method], name=template)


def _direct(config: HubConfig, endpoints: Endpoints) -> list[Route]:
    """The signed routes: the front's direct table on the fast path, and Starlette's."""
    wrap, handlers = endpoints.wrap, endpoints.handlers
    join = min(config.max_join_bytes, MAX_JOIN_BYTES)
    return [
        _route(hubapi.CHUNK, "GET", wrap(handlers.get_chunk, reads=True)),
        _route(hubapi.CHUNK, "PUT", wrap(handlers.put_chunk, MAX_CHUNK_BYTES)),
        _route(hubapi.MANIFEST, "PUT", wrap(handlers.put_manifest, MAX_MANIFEST_BYTES)),
        _route(hubapi.WRITER_MANIFESTS, "GET", wrap(handlers.get_manifests, reads=True)),
        _route(hubapi.SEQS, "GET", wrap(handlers.get_seqs, reads=True)),
        _route(hubapi.MANIFESTS, "GET", wrap(handlers.get_manifests, reads=True)),
        _route(hubapi.ROSTERS, "GET", wrap(handlers.get_rosters, reads=True)),
        _route(
            hubapi.ROSTER,
            "PUT",
            wrap(
                handlers.put_roster,
                hubapi.MAX_ROSTER_PUBLISH_BYTES,
                registering=True,
                control=True,
            ),
        ),
        _route(hubapi.CHECKPOINTS, "GET", wrap(handlers.get_checkpoint, reads=True)),
        _route(hubapi.CHECKPOINT, "PUT", wrap(handlers.put_checkpoint, MAX_CHECKPOINT_BYTES)),
        _route(hubapi.KEYRINGS, "GET", wrap(handlers.get_keyrings, reads=True)),
        _route(hubapi.KEYRING, "PUT", wrap(handlers.put_keyring, MAX_KEYRING_BYTES, control=True)),
        _route(hubapi.REQUESTS, "GET", wrap(handlers.get_requests, reads=True)),
        _route(hubapi.REQUEST, "POST", wrap(handlers.post_request, join, signed=False)),
        _route(hubapi.REQUEST, "GET", wrap(handlers.get_request, reads=True)),
        _route(hubapi.REQUEST, "DELETE", wrap(handlers.delete_request)),
        _route(hubapi.COLLECT, "POST", wrap(handlers.collect, hubapi.MAX_COLLECT_BYTES)),
        *_private(endpoints),
    ]


def _private(endpoints: Endpoints) -> list[Route]:
    """A member's private space: its devices only (:mod:`.private_routes`)."""
    wrap, private = endpoints.wrap, PrivateHandlers(endpoints.handlers)
    return [
        _route(hubapi.PRIVATE_CHUNK, "GET", wrap(private.get_chunk, reads=True)),
        _route(hubapi.PRIVATE_CHUNK, "PUT", wrap(private.put_chunk, MAX_CHUNK_BYTES)),
        _route(hubapi.PRIVATE_MANIFEST, "PUT", wrap(private.put_manifest, MAX_MANIFEST_BYTES)),
        _route(hubapi.PRIVATE_MANIFESTS, "GET", wrap(private.get_manifests, reads=True)),
        _route(hubapi.PRIVATE_CHAINS, "GET", wrap(private.get_chains, reads=True)),
        _route(hubapi.PRIVATE_KEYRINGS, "GET", wrap(private.get_keyrings, reads=True)),
        _route(hubapi.PRIVATE_KEYRING, "PUT", wrap(private.put_keyring, MAX_KEYRING_BYTES)),
        _route(hubapi.PRIVATE_TRUST, "GET", wrap(private.get_trust, reads=True)),
        _route(hubapi.PRIVATE_TRUST, "PUT", wrap(private.put_trust, MAX_TRUST_BYTES)),
    ]


def _routes(direct: list[Route], endpoints: Endpoints) -> list[Route]:
    """Starlette's table: every template, the sync cycle's first (it tries them in
    order, a regex each)."""
    return [
        *direct[:5],
        _route(hubapi.CHANGES, "GET", endpoints.changes),
        *direct[5:6],
        _route(hubapi.HEALTHZ, "GET", endpoints.healthz),
        _route(hubapi.METRICS, "GET", endpoints.metrics_text),
        *direct[6:],
    ]


def _http_error(metrics: Metrics) -> Callable[[Request, Exception], Awaitable[Response]]:
    """Starlette's 404 and 405 as the hub's JSON (the front answers the hub's refusals)."""

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code = {404: hubapi.NOT_FOUND, 405: hubapi.BAD_METHOD}.get(status, hubapi.BAD_REQUEST)
        metrics.error(code)
        body = {"error": code, "detail": f"no such hub endpoint or method (HTTP {status})"}
        return Json(body, status)

    return http_error


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
