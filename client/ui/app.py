"""The viewer as a Starlette app: pages, writes, and the server that runs it.

:func:`create_app` builds the ASGI app for one ``SEALMEM_HOME``;
:func:`serve` runs it with uvicorn on 127.0.0.1.  Each request opens the
store for itself (read-only for pages, so a read-only store can be viewed),
in a worker thread.  Writes answer 303 to the page that shows their result.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ...protocol.errors import InputError, NotFoundError, SealmemError
from ..paths import local_author, store_path
from ..recall.api import MemoryStore
from ..textsafe import visible
from . import views
from .guard import Guard, Secrets

__all__ = ["allowed_hosts", "create_app"]

HERE = Path(__file__).parent


def _finalize(value: Any) -> Any:
    """Every value a template prints: hidden characters made visible, then escaped."""
    if isinstance(value, Markup) or not isinstance(value, str):
        return value
    return visible(value)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = views.when
    env.filters["day"] = views.day
    env.filters["pct"] = lambda v: f"{float(v) * 100:.0f}%"
    env.filters["u"] = lambda v: quote(str(v), safe="")
    return env


def allowed_hosts(port: int) -> frozenset[str]:
    """The Host values a request to a viewer on ``port`` may carry (without the
    port on 80, which browsers leave out)."""
    names = ("127.0.0.1", "localhost")
    return frozenset({f"{name}:{port}" for name in names} | (set(names) if port == 80 else set()))


def create_app(
    home: Path,
    secrets: Secrets,
    hosts: frozenset[str],
    *,
    clock: Callable[[], int] | None = None,
) -> Guard:
    """The viewer of the store under ``home``, behind its :class:`Guard`."""
    env = _environment()
    db = store_path(home)
    # Once, at start: resolving it per request would mint a new member key (and
    # rewrite identity.json) the moment the key went missing while a page was viewed.
    author = local_author(home)

    @contextlib.contextmanager
    def opened(*, readonly: bool) -> Iterator[MemoryStore]:
        store = MemoryStore.open(db, author=author, clock=clock, readonly=readonly)
        try:
            yield store
        finally:
            store.close()

    def page(name: str, request: Request, ctx: dict[str, Any], status: int = 200) -> HTMLResponse:
        html = env.get_template(name).render(
            {**ctx, "csrf": secrets.csrf, "path": request.url.path}
        )
        return HTMLResponse(html, status_code=status)

    def refused(request: Request, exc: SealmemError) -> HTMLResponse:
        status = 404 if isinstance(exc, NotFoundError) else 400
        return page("error.html", request, {"message": str(exc)}, status)

    async def failed(request: Request, exc: Exception) -> Response:
        """A store or file failure no lower layer translated: one sentence, no traceback."""
        from ..cli.failures import describe

        message = describe(exc) if isinstance(exc, sqlite3.Error | OSError) else str(exc)
        return page("error.html", request, {"message": message}, 503)

    async def render(request: Request, name: str, build: Callable[[MemoryStore], Any]) -> Response:
        def run() -> Any:
            with opened(readonly=True) as store:
                return build(store)

        try:
            data = await run_in_threadpool(run)
        except SealmemError as exc:
            return refused(request, exc)
        return page(name, request, data)

    def arg(request: Request, name: str) -> str | None:
        value = request.query_params.get(name, "").strip()
        return value or None

    async def search(request: Request) -> Response:
        query = request.query_params.get("q", "")
        return await render(
            request,
            "search.html",
            lambda s: views.search_page(s, query, arg(request, "project"), arg(request, "kind")),
        )

    async def memory(request: Request) -> Response:
        given = request.path_params["id"]
        return await render(request, "memory.html", lambda s: views.memory_page(s, given))

    async def timeline(request: Request) -> Response:
        return await render(
            request,
            "timeline.html",
            lambda s: views.timeline_page(s, arg(request, "project"), arg(request, "kind")),
        )

    async def team(request: Request) -> Response:
        return await render(request, "team.html", lambda s: views.team_page(home, s))

    async def store_view(request: Request) -> Response:
        return await render(request, "store.html", views.store_page)

    async def captured(request: Request) -> Response:
        return await render(request, "captured.html", views.captured_page)

    # -- writes ------------------------------------------------------------------

    async def write(
        request: Request, act: Callable[[MemoryStore, dict[str, str]], str]
    ) -> Response:
        form: dict[str, str] = request.scope.get("sealmem.form", {})

        def run() -> str:
            with opened(readonly=False) as store:
                return act(store, form)

        try:
            target = await run_in_threadpool(run)
        except SealmemError as exc:
            return refused(request, exc)
        return RedirectResponse(target, status_code=303)

    def _importance(form: dict[str, str]) -> float:
        text = form.get("importance", "").strip() or "0.5"
        try:
            return float(text)
        except ValueError:
            raise InputError(f"importance {text!r} is not a number between 0 and 1") from None

    def _remember(store: MemoryStore, form: dict[str, str]) -> str:
        words = [w.strip() for w in form.get("keywords", "").split(",") if w.strip()]
        result = store.remember(
            form.get("content", ""),
            kind=form.get("kind") or None,
            keywords=words,
            importance=_importance(form),
            project=form.get("project") or None,
            private=form.get("private") == "on",
            origin="ui",
        )
        return f"/m/{result.memory.id}"

    def _forget(store: MemoryStore, form: dict[str, str]) -> str:
        reason = form.get("reason", "").strip()
        if not reason:
            raise InputError("say why the memory is forgotten (the reason is kept)")
        return f"/m/{store.forget(form.get('id', ''), reason=reason).id}"

    def _set_importance(store: MemoryStore, form: dict[str, str]) -> str:
        return f"/m/{store.set_importance(form.get('id', ''), _importance(form)).id}"

    def _correct(store: MemoryStore, form: dict[str, str]) -> str:
        old = store.get(form.get("id", ""))
        result = store.remember(
            form.get("content", ""),
            kind=old.kind,
            keywords=list(old.record.keywords),
            importance=old.record.importance,
            project=old.project,
            supersedes=[old.id],
            origin="ui",
        )
        return f"/m/{result.memory.id}"

    def _review(verb: str) -> Callable[[MemoryStore, dict[str, str]], str]:
        def act(store: MemoryStore, form: dict[str, str]) -> str:
            from ..hosts import review

            chosen = review.choose(store, [form.get("id", "")], verb)
            if verb == "accept":
                review.accept(store, chosen)
            else:
                review.discard(store, chosen)
            return "/captured"

        return act

    def posting(act: Callable[[MemoryStore, dict[str, str]], str]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            return await write(request, act)

        return endpoint

    routes = [
        Route("/", search, methods=["GET"]),
        Route("/m/{id}", memory, methods=["GET"]),
        Route("/timeline", timeline, methods=["GET"]),
        Route("/team", team, methods=["GET"]),
        Route("/store", store_view, methods=["GET"]),
        Route("/captured", captured, methods=["GET"]),
        Route("/remember", posting(_remember), methods=["POST"]),
        Route("/forget", posting(_forget), methods=["POST"]),
        Route("/importance", posting(_set_importance), methods=["POST"]),
        Route("/correct", posting(_correct), methods=["POST"]),
        Route("/captured/accept", posting(_review("accept")), methods=["POST"]),
        Route("/captured/discard", posting(_review("discard")), methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    handlers = {sqlite3.Error: failed, OSError: failed}
    return Guard(
        Starlette(routes=routes, exception_handlers=handlers),
        secrets=secrets,
        hosts=hosts,
    )
