"""A request as the handlers see it (:class:`Ctx`) and the hub's JSON answer
(:class:`Json`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from ...protocol import hubapi
from ..auth import Proven
from ..errors import Refusal
from .edge import number

__all__ = ["Ctx", "Json"]


class Json(Response):
    """A JSON answer: the bytes of Starlette's ``JSONResponse`` (compact, UTF-8, no NaN),
    encoded by orjson (several times faster for the hub's documents)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class Ctx(Request):
    """One request as the handlers see it: Starlette's ``Request``, with its body read
    within its limit (``data``) and what handling it learns on the way."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope)
        self.data = b""
        self.kid: str | None = None  # set once authenticated, for the access log
        self.changed: str | None = None  # team whose change feed moved
        #: the request as the gate proved it from its headers (not verified again)
        self.proven: Proven | None = None
        #: a write a read handler leaves for a thread (it may run on the event loop)
        self.later: Callable[[], None] | None = None

    @property
    def target(self) -> str:
        """The request target as the client signed it: the raw path and query."""
        target = self.scope.get("raw_path") or self.url.path.encode()
        query = self.scope.get("query_string")
        return (target + b"?" + query if query else target).decode("latin-1")

    @property
    def address(self) -> str:
        return self.client.host if self.client else "-"

    def param(self, name: str) -> str:
        """A text path parameter, checked against its pattern in :data:`hubapi.PARAMS`."""
        value = str(self.path_params[name])
        pattern = hubapi.PARAMS[name]
        if pattern.fullmatch(value) is None:
            raise Refusal(
                400, hubapi.BAD_REQUEST, f"{name} {value[:80]!r} must match {pattern.pattern}"
            )
        return value

    def number(self, name: str) -> int:
        """A number path parameter (routed as ASCII digits), within int64; else 400."""
        return number(self.path_params[name], name)

    def int_query(self, name: str, default: int) -> int:
        raw = self.query_params.get(name)
        return default if raw is None else number(raw, f"query {name}")
