"""The hub's front layer and its HTTP protocol, over a real uvicorn on 127.0.0.1.

- An answer leaves the hub in one write (head and body together), a ``HEAD``
  answer's head at once, and a keep-alive connection serves the next request.
- The direct route table (``hub/http/front.py``) never routes a path where Starlette
  would not route it the same way (the same template, the same parameters); a
  path it does not take goes to Starlette, which answers it as before.
- The hub process's log time text is the standard formatter's, cached per second.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from hypothesis import given
from hypothesis import strategies as st
from starlette.routing import Match, Route

from sealmem.hub.http.app import create_app
from sealmem.hub.http.edge import route_path
from sealmem.hub.http.front import Routes
from sealmem.hub.http.http_protocol import BoundedHttpTools
from sealmem.hub.http.server import free_port
from sealmem.protocol import hubapi

from .conftest import hub_config

# -- one write per answer ----------------------------------------------------------------


class _CountingTransport:
    """The server's transport, counting the calls that put bytes on the wire."""

    def __init__(self, inner: asyncio.Transport, calls: list[int]) -> None:
        self._inner = inner
        self._calls = calls

    def write(self, data: bytes) -> None:
        self._calls.append(len(data))
        self._inner.write(data)

    def writelines(self, parts: Any) -> None:
        parts = list(parts)
        self._calls.append(sum(len(p) for p in parts))
        self._inner.writelines(parts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


#: the byte counts of the writes since the last request sent
written: list[int] = []


class _Counting(BoundedHttpTools):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        counted = _CountingTransport(transport, written)  # type: ignore[arg-type]
        super().connection_made(counted)  # type: ignore[arg-type]


@pytest.fixture
def counted_hub(tmp_path: Path) -> Iterator[int]:
    port = free_port()
    config = uvicorn.Config(
        create_app(hub_config(tmp_path / "hub-data")),
        host="127.0.0.1",
        port=port,
        http=_Counting,
        loop="asyncio",
        log_level="warning",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the hub did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _exchange(sock: socket.socket, request: bytes, ends: bytes) -> bytes:
    """Send ``request`` and read until the answer ends with ``ends``."""
    written.clear()
    sock.sendall(request)
    answer = b""
    deadline = time.monotonic() + 5
    while not answer.endswith(ends) and time.monotonic() < deadline:
        answer += sock.recv(65536)
    return answer


def test_an_answer_is_one_write_and_a_head_answer_goes_out_at_once(counted_hub: int) -> None:
    with socket.create_connection(("127.0.0.1", counted_hub), timeout=5) as sock:
        get = b"GET /healthz HTTP/1.1\r\nHost: hub\r\n\r\n"
        answer = _exchange(sock, get, b'{"ok":true}')
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert answer.endswith(b'{"ok":true}')
        assert written == [len(answer)], "the head and the body in one write"

        # a signed route of an unknown team: a direct refusal with a JSON body, in one write
        seqs = f"{hubapi.VERSION_PREFIX}/teams/acme/projects/web/seqs".encode()
        answer = _exchange(sock, b"GET " + seqs + b" HTTP/1.1\r\nHost: hub\r\n\r\n", b"}")
        assert answer.startswith(b"HTTP/1.1 404 ")
        assert b'"unknown-team"' in answer
        assert written == [len(answer)]

        # HEAD: uvicorn writes no body after the head, which must not wait for one
        answer = _exchange(sock, b"HEAD /healthz HTTP/1.1\r\nHost: hub\r\n\r\n", b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert b"content-length: 11" in answer
        assert written == [len(answer)]

        # the connection is still good for the next request
        answer = _exchange(sock, get, b'{"ok":true}')
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert written == [len(answer)]


# -- the direct route table never disagrees with Starlette ---------------------------------

DIRECT = [
    (hubapi.CHUNK, "GET"), (hubapi.CHUNK, "PUT"), (hubapi.MANIFEST, "PUT"),
    (hubapi.WRITER_MANIFESTS, "GET"), (hubapi.SEQS, "GET"), (hubapi.MANIFESTS, "GET"),
    (hubapi.ROSTERS, "GET"), (hubapi.ROSTER, "PUT"), (hubapi.KEYRINGS, "GET"),
    (hubapi.KEYRING, "PUT"), (hubapi.REQUESTS, "GET"), (hubapi.REQUEST, "POST"),
    (hubapi.REQUEST, "GET"), (hubapi.REQUEST, "DELETE"), (hubapi.COLLECT, "POST"),
]  # fmt: skip


async def _endpoint(request: object) -> Any:  # pragma: no cover - never awaited
    raise AssertionError


ROUTES = Routes(Route(route_path(t), _endpoint, methods=[m], name=t) for t, m in DIRECT)
STARLETTE = [Route(route_path(t), _endpoint, methods=[m], name=f"{m} {t}") for t, m in DIRECT] + [
    Route(route_path(t), _endpoint, methods=["GET"], name=f"GET {t}")
    for t in (hubapi.CHANGES, hubapi.HEALTHZ, hubapi.METRICS)
]


def _starlette(method: str, path: str) -> tuple[str, dict[str, Any]] | None:
    """What Starlette's router would route to: the first full match, in order."""
    scope = {"type": "http", "method": method, "path": path, "root_path": ""}
    for route in STARLETTE:
        match, child = route.matches(scope)
        if match is Match.FULL:
            return route.name, dict(child["path_params"])
    return None


SEGMENT = st.one_of(
    st.sampled_from(
        ["v1", "teams", "projects", "manifests", "chunks", "seqs", "rosters", "keyrings",
         "requests", "collect", "changes", "healthz", "acme", "web", "7", "007", "", "x\n",
         "5\n", "a" * 26, "٣", "1_0"]
    ),
    st.text(alphabet="az09-_.%\n ", max_size=6),
)  # fmt: skip


def _filled(template: str, values: list[str]) -> str:
    parts = template.split("/")
    fields = iter(values)
    return "/".join(next(fields, "x") if p.startswith("{") else p for p in parts)


PATHS = st.one_of(
    st.lists(SEGMENT, max_size=9).map(lambda parts: "/" + "/".join(parts)),
    st.builds(_filled, st.sampled_from([t for t, _ in DIRECT]), st.lists(SEGMENT, max_size=6)),
)
METHODS = st.sampled_from(["GET", "PUT", "POST", "DELETE", "HEAD", "PATCH"])


@given(method=METHODS, path=PATHS)
def test_the_direct_table_routes_only_as_starlette_does(method: str, path: str) -> None:
    found = ROUTES.match(method, path)
    if found is None:
        return  # Starlette answers it, whatever it is
    route, params = found
    assert _starlette(method, path) == (f"{method} {route.name}", params)


@given(template=st.sampled_from(DIRECT), values=st.lists(SEGMENT, min_size=5, max_size=5))
def test_a_well_formed_path_takes_the_direct_route(
    template: tuple[str, str], values: list[str]
) -> None:
    """Where Starlette routes a signed template without a line feed's help (its ``$``
    also matches before a final newline), the direct table routes it the same."""
    path = _filled(template[0], values)
    expected = _starlette(template[1], path)
    if expected is None or "\n" in path:
        return
    found = ROUTES.match(template[1], path)
    assert found is not None, path
    route, params = found
    assert (f"{template[1]} {route.name}", params) == expected
