"""The hub's one ASGI layer: the access log, metrics, edge and error answers together.

Every HTTP request passes :class:`Front` once.  It stamps the hub clock in
``Sealmem-Hub-Time`` on the answer (a client tells a skewed clock from a bad
signature), closes the connection after an answer sent before the request body was
read (an unread body is never parsed as the next request nor waited for), answers a
refusal as ``{"error": code, "detail": sentence}`` and the unexpected as a JSON 500
``internal`` without a traceback, and writes one metrics sample and one line of the
access log (``sealmem.hub.access``: method, route template, status, duration, member
id; no bodies, query strings, ids in paths, headers or secrets).

On the fast path the signed ``/v1`` routes are found by one dict lookup on (method,
number of path segments) and a compare of literal segments (:class:`Routes`), where
Starlette tries its routes in turn (a regex each); the endpoint is called as an ASGI
app with the path parameters in ``scope["path_params"]``, as Starlette calls it.
Everything else (``/healthz``, ``/metrics``, the change feed, an unknown path or
method, a mounted ``root_path``) goes to the Starlette app behind, which has a route
for every template.  Refusals are answered here on both paths (:meth:`Front.answer`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...protocol import hubapi
from ..errors import Refusal
from ..storage import DiskFull, QuotaExceeded, StorageError
from .messages import Json
from .metrics import Metrics

__all__ = ["Front", "Routes"]

access_log = logging.getLogger("sealmem.hub.access")
log = logging.getLogger("sealmem.hub")

_INTERNAL = {
    "error": hubapi.INTERNAL,
    "detail": "the hub failed to answer this request (a hub bug: please report it; the "
    "hub operator's log has the details)",
}
#: 503 like ``storage`` (the hub's condition, not the request's; 507 is the team's quota,
#: which members fix themselves); no Retry-After: it lasts until the operator acts
_DISK_FULL = {
    "error": hubapi.DISK_FULL,
    "detail": "the hub's disk is full, so nothing was stored; reads still work: tell the "
    "hub's operator",
}
_TIME = hubapi.HEADER_HUB_TIME.encode("latin-1")
_CLOSE = (b"connection", b"close")
_WRITES = frozenset({"PUT", "POST", "DELETE"})


class Routes:
    """Starlette's routes of the signed templates by (method, number of path segments),
    in the order given: a path is tried only against the compiled paths of its shape.

    Two templates with the same method and segment count differ in a literal
    segment (the hub's do), so at most one matches a path: the order only
    matters as Starlette's would."""

    def __init__(self, routes: Iterable[Route] = ()) -> None:
        self._shapes: dict[tuple[str, int], list[Route]] = {}
        for route in routes:
            method = next(m for m in route.methods or () if m != "HEAD")
            key = (method, route.path.count("/") + 1)
            self._shapes.setdefault(key, []).append(route)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self._shapes.get((method, path.count("/") + 1), ()):
            found = route.path_regex.match(path)
            if found is not None:
                return route, found.groupdict()
        return None


def has_body(scope: Scope) -> bool:
    """Whether the request announces a body (``Transfer-Encoding``, or a length > 0)."""
    for name, value in scope["headers"]:
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            return value.strip() not in (b"0", b"")
    return False


class Front:
    """ASGI: the hub's access log, metrics, edge and error answers, one layer deep."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        routes: Routes,
        metrics: Metrics,
        clock: Callable[[], int],
    ) -> None:
        self.app = app
        self.routes = routes
        self.metrics = metrics
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        method = scope["method"]
        found = None if scope.get("root_path") else self.routes.match(method, scope["path"])
        body_done = not has_body(scope)
        status = 500
        answering = False

        async def receive_wrapper() -> Message:
            nonlocal body_done
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def send_wrapper(message: Message) -> None:
            nonlocal status, answering
            if message["type"] == "http.response.start":
                answering = True
                status = int(message["status"])
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if body_done or k.lower() != b"connection"
                ]
                headers.append((_TIME, str(self.clock()).encode()))
                if not body_done:
                    headers.append(_CLOSE)
                message = {**message, "headers": headers}
            await send(message)

        try:
            if found is None:
                await self.app(scope, receive_wrapper, send_wrapper)
            else:
                scope["path_params"] = found[1]
                await found[0].app(scope, receive_wrapper, send_wrapper)
        except Exception as exc:
            template = found[0].name if found else _template(scope)
            response = self.answer(exc, str(method)[:16], template)
            if not answering:  # else the answer is under way; the server closes the connection
                await response(scope, receive_wrapper, send_wrapper)
        finally:
            if status < 300 and method in _WRITES:
                self.metrics.disk.wrote()
            template = found[0].name if found else _template(scope)
            self._done(template, method, status, started, scope.get("sealmem.kid"))

    def answer(self, exc: Exception, method: str, template: str) -> Response:
        """The answer to a refusal the hub names (counted by code), else a JSON 500."""
        if isinstance(exc, Refusal):
            self.metrics.error(exc.code)
            retry = exc.retry_after
            headers = None if retry is None else {hubapi.HEADER_RETRY_AFTER: str(retry)}
            return Json(exc.body(), exc.status, headers=headers)
        if isinstance(exc, QuotaExceeded):
            self.metrics.error(hubapi.QUOTA_EXCEEDED)
            return Json({"error": hubapi.QUOTA_EXCEEDED, "detail": str(exc)}, 507)
        if isinstance(exc, DiskFull):
            log.error("storage full: %s", exc)
            self.metrics.error(hubapi.DISK_FULL)
            self.metrics.disk.full(self.clock())
            return Json(_DISK_FULL, 503)
        if isinstance(exc, StorageError):
            log.error("storage failure: %s", exc)
            self.metrics.error(hubapi.STORAGE)
            body = {
                "error": hubapi.STORAGE,
                "detail": "the hub could not read or write its storage",
            }
            return Json(body, 503)
        log.exception("unexpected error answering %s %s", method, template)
        return Json(_INTERNAL, 500)

    def _done(
        self, template: str, method: str, status: int, started: float, kid: str | None
    ) -> None:
        seconds = time.perf_counter() - started
        self.metrics.observe(template, method, status, seconds)
        if access_log.isEnabledFor(logging.INFO):
            # the record made here: Logger.info would walk the stack for a caller
            # (file, line) that the access log never prints, on every request
            access_log.handle(
                access_log.makeRecord(
                    access_log.name, logging.INFO, __file__, 0,
                    "%s %s %d %.1fms member=%s",
                    (method[:8], template, status, seconds * 1000, kid or "-"),
                    None,
                )
            )  # fmt: skip


def _template(scope: Scope) -> str:
    route = scope.get("route")
    return getattr(route, "name", None) or "unmatched"
