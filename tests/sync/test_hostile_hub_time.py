"""A hostile or broken hub's ``Sealmem-Hub-Time`` (huge, negative, non-ASCII, before
any real clock, missing) must neither crash a sync nor tell the member nonsense about
its clock.  The hub is the real app under uvicorn on 127.0.0.1; only the header its
answers carry is rewritten on the way out."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from sealmem.client.sync import clockhealth
from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.session import sync_health
from sealmem.hub.app import create_app
from sealmem.hub.server import free_port
from sealmem.protocol.hubapi import HEADER_HUB_TIME
from tests.hub.conftest import TEAM, TOKEN, HubWorld, hub_config

pytestmark = pytest.mark.slow

Scope = dict[str, Any]


class TellsTime:
    """ASGI middleware: every answer's hub-time header replaced by ``value`` (None: none)."""

    def __init__(self, app: Any, value: bytes | None) -> None:
        self.app = app
        self.value = value

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def rewrite(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                name = HEADER_HUB_TIME.encode("ascii")
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != name]
                if self.value is not None:
                    headers.append((name, self.value))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, rewrite)


def _serve(tmp_path: Path, value: bytes | None) -> Iterator[str]:
    config = hub_config(tmp_path / "hub-data", port=free_port())
    app = TellsTime(create_app(config), value)
    server = uvicorn.Server(
        uvicorn.Config(app, host=config.host, port=config.port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive(), "the hub did not start"
        assert time.monotonic() < deadline, "the hub did not start in time"
        time.sleep(0.02)
    try:
        yield f"http://{config.host}:{config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


HOSTILE = {
    "huge": b"99999999999999999",  # 17 digits: three million years from now
    "largest": b"999999999999999999",
    "negative": b"-86400000",
    "non-ascii": "\u00b9\u00b2\u00b3".encode("latin-1"),
    "fraction": b"1796000000000.5",
    "before-any-clock": b"0",
    "missing": None,
}


@pytest.fixture(params=sorted(HOSTILE))
def hostile_hub(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from _serve(tmp_path, HOSTILE[request.param])


def test_a_hostile_hub_time_neither_crashes_nor_misleads(tmp_path: Path, hostile_hub: str) -> None:
    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(
        homes, hostile_hub, lambda key: HubTransport(hostile_hub, TEAM, key, operator_token=TOKEN)
    )
    try:
        world.create()
        (alice,) = world.join("alice")
        alice.remember("the hub's clock cannot be trusted")
        summary = alice.sync()
        assert summary.pushed_versions >= 1
        assert [w for w in summary.warnings if "clock" in w] == []
        assert clockhealth.load(alice.store.connection) is None
        health = sync_health(alice.home, alice.store.connection)
        assert health["clock"] is None
        assert health["alarms"] == []
    finally:
        world.close()
