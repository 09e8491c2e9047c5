"""A hub app in this process that can be stopped and started over its data directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import SUITE, MemberKey
from sealmem.hub.config import HubConfig
from sealmem.hub.http.app import create_app
from sealmem.hub.storage import Storage
from sealmem.protocol.snapshot import chunk_id

from .conftest import IN_PROCESS_URL, PROJECT, TEAM, TOKEN, HubWorld, signed

__all__ = ["Hub", "make_hub_fixture"]


class Hub:
    """The app in process, restartable over the same data directory."""

    def __init__(self, config: HubConfig, homes: Path) -> None:
        self.config = config
        self.homes = homes
        self.client: TestClient | None = None
        self.start()

    def start(self) -> None:
        self.client = TestClient(create_app(self.config), base_url=IN_PROCESS_URL)
        self.client.__enter__()

    def stop(self) -> None:
        if self.client is not None:
            self.client.__exit__(None, None, None)
            self.client = None

    @property
    def c(self) -> TestClient:
        assert self.client is not None
        return self.client

    @property
    def storage(self) -> Storage:
        store: Storage = self.c.app.state.storage  # type: ignore[attr-defined]
        return store

    def world(self) -> HubWorld:
        w = HubWorld(
            self.homes,
            IN_PROCESS_URL,
            lambda k: HubTransport(IN_PROCESS_URL, TEAM, k, operator_token=TOKEN, client=self.c),
        )
        w.create()
        w.join("alice", "bob")
        return w

    def put_chunk(self, key: MemberKey, data: bytes) -> httpx.Response:
        cid = chunk_id(SUITE, data)
        path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{cid}"
        return self.c.put(path, headers=signed(key, "PUT", path, data), content=data)


@pytest.fixture(name="make_hub")
def make_hub_fixture(tmp_path: Path) -> Iterator[type[Hub]]:
    hubs: list[Hub] = []
    homes = tmp_path / "homes"
    homes.mkdir()

    class Made(Hub):
        def __init__(self, config: HubConfig) -> None:
            super().__init__(config, homes)
            hubs.append(self)

    yield Made
    for hub in hubs:
        hub.stop()
