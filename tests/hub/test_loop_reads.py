"""Where the storage's reads are local (SQLite), a signed request that only reads
metadata is served on the event loop and a body's headers-only gate too: a GET
takes no threadpool hop and a PUT one (its handler), where a networked backend
takes one per storage call (a GET one, a PUT two)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import sealmem.hub.app as hub_app
from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import SUITE
from sealmem.hub.sqlite_storage import SQLiteStorage
from sealmem.protocol.snapshot import chunk_id

from .conftest import IN_PROCESS_URL, PROJECT, TEAM, TOKEN, HubWorld, hub_config, signed

Hops = Callable[[Callable[[TestClient, HubWorld], object]], int]


@pytest.fixture(params=[True, False], ids=["local-reads", "networked"])
def hops(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[bool, Hops]]:
    local: bool = request.param
    store = SQLiteStorage(tmp_path / "hub")
    store.local_reads = local  # as a PostgreSQL storage says when False
    app = hub_app.create_app(hub_config(tmp_path / "hub"), store)
    homes = tmp_path / "homes"
    homes.mkdir()
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        world = HubWorld(
            homes,
            IN_PROCESS_URL,
            lambda k: HubTransport(IN_PROCESS_URL, TEAM, k, operator_token=TOKEN, client=client),
        )
        world.create()
        world.join("alice")
        calls: list[str] = []
        real = hub_app.run_in_threadpool

        async def counted(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            calls.append(getattr(fn, "__name__", "?"))
            return await real(fn, *args, **kwargs)

        monkeypatch.setattr(hub_app, "run_in_threadpool", counted)

        def count(action: Callable[[TestClient, HubWorld], object]) -> int:
            calls.clear()
            action(client, world)
            return len(calls)

        yield local, count


def _get_seqs(client: TestClient, world: HubWorld) -> None:
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/seqs"
    answer = client.get(path, headers=signed(world.nodes["alice"].key, "GET", path))
    assert answer.status_code == 200


def _put_chunk(client: TestClient, world: HubWorld) -> None:
    key = world.nodes["alice"].key
    data = b"an encrypted chunk, as far as the hub can tell"
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{chunk_id(SUITE, data)}"
    answer = client.put(path, headers=signed(key, "PUT", path, data), content=data)
    assert answer.status_code == 201


def test_a_signed_read_takes_no_threadpool_hop_on_local_storage(
    hops: tuple[bool, Hops],
) -> None:
    local, count = hops
    assert count(_get_seqs) == (0 if local else 1)


def test_a_signed_upload_takes_one_threadpool_hop_on_local_storage(
    hops: tuple[bool, Hops],
) -> None:
    local, count = hops
    assert count(_put_chunk) == (1 if local else 2)
