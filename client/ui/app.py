"""The viewer as a Starlette app: its pages, and its writes (:mod:`.writes`).

:func:`create_app` builds the ASGI app for one ``SEALMEM_HOME``;
:mod:`.server` runs it with uvicorn on 127.0.0.1.  Each request opens the
store for itself (read-only for pages, so a read-only store can be viewed),
in a worker thread.  Writes answer 303 to the page that shows their result.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ...protocol.errors import NotFoundError, SealmemError
from ..failures import describe
from ..paths import local_author, store_path
from ..project import current_project
from ..recall import semantic
from ..recall.api import MemoryStore
from ..textsafe import visible
from . import views
from .guard import Guard, Secrets
from .writes import WRITES, Write

__all__ = ["allowed_hosts", "create_app"]

HERE = Path(__file__).parent

Read = Callable[[Request, MemoryStore], Any]
"""What a page shows: built from its request and the store, opened read-only."""


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


def _arg(request: Request, name: str) -> str | None:
    value = request.query_params.get(name, "").strip()
    return value or None


def _reads(home: Path, project: str) -> dict[str, tuple[str, Read]]:
    """Each page: its path, its template and what it shows."""
    return {
        "/": (
            "search.html",
            lambda r, s: (
                views.search_page(
                    s, r.query_params.get("q", ""), _arg(r, "project"), _arg(r, "kind")
                )
                | {"default_project": project}
            ),
        ),
        "/m/{id}": ("memory.html", lambda r, s: views.memory_page(s, r.path_params["id"])),
        "/timeline": (
            "timeline.html",
            lambda r, s: views.timeline_page(s, _arg(r, "project"), _arg(r, "kind")),
        ),
        "/team": ("team.html", lambda r, s: views.team_page(home, s)),
        "/store": ("store.html", lambda r, s: views.store_page(s)),
        "/captured": ("captured.html", lambda r, s: views.captured_page(s)),
        "/review": ("review.html", lambda r, s: views.review_page(s, _arg(r, "project"))),
    }


def _with_store(db: Path, author: str, readonly: bool, work: Callable[[MemoryStore], Any]) -> Any:
    """``work`` on the store at ``db``, opened for this call alone."""
    store = MemoryStore.open(db, author=author, readonly=readonly)
    try:
        return work(store)
    finally:
        store.close()


def _note_recalled(db: Path, author: str, ids: list[str]) -> None:
    """What a search page showed counts as recalled (:mod:`..store.freshness`); a store
    that cannot be written keeps no note."""
    with contextlib.suppress(SealmemError, sqlite3.Error, OSError):
        _with_store(db, author, False, lambda store: store.note_recalled(ids))


def _noted(response: Response, db: Path, author: str, due: list[str] | None) -> Response:
    """``response``, noting ``due`` as recalled once it is sent (:func:`_note_recalled`)."""
    if due:
        response.background = BackgroundTask(run_in_threadpool, _note_recalled, db, author, due)
    return response


def create_app(
    home: Path, secrets: Secrets, hosts: frozenset[str], *, project: str | None = None
) -> Guard:
    """The viewer of the store under ``home``, behind its :class:`Guard`; its remember
    form starts with ``project`` (default: the project of the directory it starts in)."""
    env = _environment()
    project = project or current_project()
    db = store_path(home)
    # Once, at start: resolving it per request would mint a new member key (and
    # rewrite identity.json) the moment the key went missing while a page was viewed.
    author = local_author(home)
    semantic.start(db)  # a long-lived process: recall by meaning too, with the extra

    def page(name: str, request: Request, ctx: dict[str, Any], status: int = 200) -> HTMLResponse:
        html = env.get_template(name).render(
            {**ctx, "csrf": secrets.csrf, "path": request.url.path}
        )
        return HTMLResponse(html, status_code=status)

    async def in_store(
        request: Request,
        readonly: bool,
        work: Callable[[MemoryStore], Any],
        form: dict[str, str] | None = None,
    ) -> Any:
        """``work``'s result in a worker thread, or the refusal page of a SealmemError
        (with the refused ``form`` filled in again, to correct and send once more)."""

        try:
            return await run_in_threadpool(_with_store, db, author, readonly, work)
        except SealmemError as exc:
            status = 404 if isinstance(exc, NotFoundError) else 400
            retry = {"message": str(exc), "form": form or {}, "retry": request.url.path}
            return page("error.html", request, retry, status)

    async def failed(request: Request, exc: Exception) -> Response:
        """A store or file failure no lower layer translated: one sentence, no traceback."""
        message = describe(exc) if isinstance(exc, sqlite3.Error | OSError) else str(exc)
        return page("error.html", request, {"message": message}, 503)

    def reading(name: str, read: Read) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            data = await in_store(request, True, lambda store: read(request, store))
            if isinstance(data, Response):
                return data
            return _noted(page(name, request, data), db, author, data.get("due"))

        return endpoint

    def posting(write: Write) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            # a form without a project field is for the viewer's; an emptied one is asked for
            form: dict[str, str] = {"project": project, **request.scope.get("sealmem.form", {})}
            target = await in_store(request, False, lambda store: write(store, form), form)
            if isinstance(target, Response):
                return target
            semantic.start(db)  # wakes the background pass: a vector for what it wrote now
            return RedirectResponse(target, 303)

        return endpoint

    routes: list[Route | Mount] = [
        Route(path, reading(name, read), methods=["GET"])
        for path, (name, read) in _reads(home, project).items()
    ]
    routes += [Route(path, posting(write), methods=["POST"]) for path, write in WRITES.items()]
    routes.append(Mount("/static", StaticFiles(directory=HERE / "static"), name="static"))
    handlers = {sqlite3.Error: failed, OSError: failed}
    return Guard(
        Starlette(routes=routes, exception_handlers=handlers),
        secrets=secrets,
        hosts=hosts,
    )
