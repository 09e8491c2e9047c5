"""HubTransport against hostile HTTP answers from a real server: a bad header from
the hub is a HubError or a retry, never a stray ValueError out of the sync."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from sealmem.client.sync.hub import HubError, HubTransport
from sealmem.crypto import MemberKey
from sealmem.hub.http.server import free_port

from .conftest import TEAM


class _Hostile:
    """Under uvicorn on 127.0.0.1: the first roster read gets ``first``, later ones []."""

    def __init__(self) -> None:
        self.first: Response | None = None
        self.calls = 0

        async def rosters(request: Request) -> Response:
            self.calls += 1
            if self.calls == 1 and self.first is not None:
                return self.first
            return JSONResponse({"rosters": []})

        app = Starlette(routes=[Route(f"/v1/teams/{TEAM}/rosters", rosters)])
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, port=self.port, log_level="warning"))

    def transport(self, first: Response) -> HubTransport:
        self.first, self.calls = first, 0
        return HubTransport(f"http://127.0.0.1:{self.port}", TEAM, MemberKey.generate())


@pytest.fixture(scope="module")
def hostile() -> Iterator[_Hostile]:
    h = _Hostile()
    thread = threading.Thread(target=h.server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not h.server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield h
    finally:
        h.server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.slow
def test_a_nan_retry_after_is_retried_not_raised(hostile: _Hostile) -> None:
    busy = JSONResponse(
        {"error": "rate-limited", "detail": "slow down"}, 429, headers={"retry-after": "nan"}
    )
    transport = hostile.transport(busy)
    try:
        assert transport.rosters(0) == []
    finally:
        transport.close()
    assert hostile.calls == 2


# "\u00b2".isdigit() is true but int() refuses it; 5000 digits pass int()'s digit limit
@pytest.mark.parametrize("hub_time", ["\u00b2", "9" * 5000], ids=["superscript-two", "huge"])
def test_a_hub_clock_that_is_not_a_number_is_refused_as_stale_time(
    hostile: _Hostile, hub_time: str
) -> None:
    stale = JSONResponse(
        {"error": "stale-time", "detail": "fix this machine's clock"},
        401,
        headers={"sealmem-hub-time": hub_time},
    )
    transport = hostile.transport(stale)
    try:
        with pytest.raises(HubError) as info:
            transport.rosters(0)
    finally:
        transport.close()
    assert (info.value.status, info.value.code) == (401, "stale-time")


def test_a_detail_of_megabytes_of_control_characters_is_excerpted_at_once(
    hostile: _Hostile,
) -> None:
    """Only the 80 characters shown are escaped: before, every one of the detail's 8 MB of
    ESC bytes was, some 20 s of CPU for one refusal (and again for each one)."""
    flood = JSONResponse({"error": "not-admin", "detail": "\x1b" * 8_000_000}, 403)
    transport = hostile.transport(flood)
    started = time.monotonic()
    try:
        with pytest.raises(HubError) as info:
            transport.rosters(0)
    finally:
        transport.close()
    took = time.monotonic() - started
    assert (info.value.status, info.value.code) == (403, "not-admin")
    assert info.value.said == ("\\x1b" * 20)[:77] + "..."
    assert took < 4.0, f"one refusal took {took:.1f} s to word"
