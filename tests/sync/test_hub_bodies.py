"""A hostile hub's answer body (deeply nested JSON, bad UTF-8, the wrong shape) is a
``TransportError`` that names the hub, never a stray exception.  The "hub" is a real
ASGI app under uvicorn on 127.0.0.1 that answers every request with one fixed body."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import MemberKey
from sealmem.protocol.errors import TransportError
from tests.support.asgi_thread import serving

NESTED = b"[" * 100_000
BODIES = {
    "nested-array": NESTED,
    "nested-error": b'{"error": ' * 50_000,
    "bad-utf8": b"\xff\xfe\x00",
    "not-an-object": b"[1, 2]",
}


class Answers:
    """Every request gets ``status`` and ``body`` (a JSON content type)."""

    def __init__(self) -> None:
        self.status, self.body = 200, b"{}"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


@pytest.fixture(scope="module")
def hub() -> Iterator[tuple[Answers, str]]:
    app = Answers()
    with serving(app) as url:
        yield app, url


@pytest.mark.parametrize("status", [200, 403, 409])
@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_hostile_body_is_a_transport_error(
    hub: tuple[Answers, str], name: str, status: int
) -> None:
    app, url = hub
    app.status, app.body = status, BODIES[name]
    transport = HubTransport(url, "team1", MemberKey.generate())
    try:
        with pytest.raises(TransportError, match=url):
            transport.rosters(0)
    finally:
        transport.close()


@pytest.mark.parametrize("status", [b"[]", b'{"a": 1}', b"7", b'"maybe"'])
def test_a_join_state_of_the_wrong_shape_is_a_transport_error(
    hub: tuple[Answers, str], status: bytes
) -> None:
    app, url = hub
    app.status, app.body = 200, b'{"status": ' + status + b"}"
    key = MemberKey.generate()
    transport = HubTransport(url, "team1", key)
    try:
        with pytest.raises(TransportError, match="join request state"):
            transport.join_status(key.kid)
    finally:
        transport.close()
