"""A request as the handlers see it (:class:`Ctx`, made from the ASGI scope by
:func:`context`), and the hub's JSON answer (:class:`Json`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.datastructures import URL, Headers, QueryParams
from starlette.responses import Response
from starlette.types import Scope

from ...protocol import hubapi
from ..auth import Signed
from ..errors import Refusal
from .edge import number

__all__ = ["Ctx", "Json", "context"]


class Json(Response):
    """A JSON answer: the bytes of Starlette's ``JSONResponse`` (compact, UTF-8, no NaN),
    encoded by orjson (several times faster for the hub's documents)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


@dataclass
class Ctx:
    """One request as the handlers see it (body already read within its limit)."""

    method: str
    target: str
    params: Mapping[str, Any]
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    client: str
    kid: str | None = None  # set once authenticated, for the access log
    changed: str | None = None  # team whose change feed moved
    #: the signature headers as the gate read them (the handler does not parse them again)
    claimed: Signed | None = None
    #: a write a read handler leaves for a thread (it may run on the event loop)
    later: Callable[[], None] | None = None

    def param(self, name: str) -> str:
        """A text path parameter, checked against its pattern in :data:`hubapi.PARAMS`."""
        value = str(self.params[name])
        pattern = hubapi.PARAMS[name]
        if pattern.fullmatch(value) is None:
            raise Refusal(
                400, hubapi.BAD_REQUEST, f"{name} {value[:80]!r} must match {pattern.pattern}"
            )
        return value

    def number(self, name: str) -> int:
        """A number path parameter (routed as ASCII digits), within int64; else 400."""
        return number(self.params[name], name)

    def int_query(self, name: str, default: int) -> int:
        raw = self.query.get(name)
        return default if raw is None else number(raw, f"query {name}")


def context(scope: Scope, params: Mapping[str, Any]) -> Ctx:
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
        query=QueryParams(query),
        headers=Headers(scope=scope),  # lowercase names, latin-1, a repeated name's first value
        body=b"",
        client=client[0] if client else "-",
    )
