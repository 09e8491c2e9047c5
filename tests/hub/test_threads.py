"""Where a request's blocking calls run.  On the plain path every one takes a thread of
Starlette's ``run_in_threadpool`` (a GET one hop, a PUT two: the gate before the body,
then the handler and its write), routed by Starlette.  On the fast path the route is found
by the front's direct table and the calls take the hub's own workers, except that over
local storage the gate and the reads run on the event loop while it keeps up (a PUT: one
hop, its write); a write never runs on the loop.  A chunk row whose blob is gone is
dropped in a hop before its 404.  ``sealmem hub serve --plain`` serves the plain path."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from sealmem.client.cli import main
from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import SUITE
from sealmem.hub.config import HubConfig
from sealmem.hub.http import server
from sealmem.hub.http import workers as hub_workers
from sealmem.hub.http.app import create_app
from sealmem.hub.http.front import Front
from sealmem.hub.http.routes import Handlers
from sealmem.hub.http.workers import Pace, Workers
from sealmem.hub.storage import Storage
from sealmem.hub.storage.blobs import BlobKey
from sealmem.protocol import hubapi
from sealmem.protocol.snapshot import chunk_id

from .conftest import BOTH_PATHS, IN_PROCESS_URL, PROJECT, TEAM, TOKEN, HubWorld, hub_config
from .conftest import signed as sign

pytestmark = BOTH_PATHS

DATA = b"an encrypted chunk, as far as the hub can tell"


@dataclass
class Counted:
    client: TestClient
    world: HubWorld
    storage: Storage
    #: the calls that took the hub's workers, and Starlette's thread pool, by name
    workers: list[str]
    threadpool: list[str]
    #: the templates Starlette's router answered
    routed: list[str]

    def clear(self) -> None:
        self.workers.clear()
        self.threadpool.clear()
        self.routed.clear()

    def request(self, method: str, data: bytes = DATA, what: str = "chunks") -> int:
        key = self.world.nodes["alice"].key
        tail = f"chunks/{key.kid}/{chunk_id(SUITE, data)}" if what == "chunks" else what
        path = f"/v1/teams/{TEAM}/projects/{PROJECT}/{tail}"
        body = data if method == "PUT" else b""
        headers = sign(key, method, path, body)
        return self.client.request(method, path, headers=headers, content=body).status_code


@pytest.fixture
def blobs_url(request: pytest.FixtureRequest) -> str | None:
    """The hub's blob store: a directory beside its database, or S3 where a test says so."""
    return str(request.getfixturevalue("s3_url")) if getattr(request, "param", "") else None


@pytest.fixture
def counted(
    tmp_path: Path, fast: bool, blobs_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Counted]:
    workers: list[str] = []
    threadpool: list[str] = []
    routed: list[str] = []
    real_run, real_threadpool, real_route = (
        Workers.run,
        hub_workers.run_in_threadpool,
        Front.__call__,
    )

    async def run(self: Workers, fn: Callable[..., Any], *args: Any) -> Any:
        workers.append(getattr(fn, "func", fn).__name__)  # a partial: its function
        return await real_run(self, fn, *args)

    async def threadpool_run(fn: Callable[..., Any], *args: Any) -> Any:
        threadpool.append(getattr(fn, "func", fn).__name__)
        return await real_threadpool(fn, *args)

    async def framework(self: Front, scope: Any, *args: Any) -> None:
        await real_route(self, scope, *args)
        route = scope.get("route")
        if route is not None:
            routed.append(str(route.name))

    monkeypatch.setattr(Workers, "run", run)
    monkeypatch.setattr(hub_workers, "run_in_threadpool", threadpool_run)
    monkeypatch.setattr(Front, "__call__", framework)
    app = create_app(hub_config(tmp_path / "hub", fast=fast, blobs_url=blobs_url))
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
        yield Counted(client, world, app.state.storage, workers, threadpool, routed)
        world.close()


@pytest.fixture(params=[True, False], ids=["keeping-up", "lagging"])
def keeping_up(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the loop keeps up: every tick is on time, or every one is late."""
    monkeypatch.setattr(hub_workers, "LATE_S", math.inf if request.param else -1.0)
    return bool(request.param)


def test_a_loop_held_up_is_seen_to_lag_at_its_next_tick() -> None:
    async def main() -> tuple[bool, bool]:
        pace = Pace(enabled=True)
        watching = asyncio.create_task(pace.watch())
        await asyncio.sleep(0)
        before = pace.keeping_up
        time.sleep(hub_workers.TICK_S + 0.1)  # a call that holds the loop
        await asyncio.sleep(0.01)
        watching.cancel()
        return before, pace.keeping_up

    assert asyncio.run(main()) == (True, False)
    assert not Pace(enabled=False).keeping_up


def test_a_call_that_held_the_loop_counts_until_the_tick_after_next() -> None:
    async def main() -> list[bool]:
        pace = Pace(enabled=True)
        watching = asyncio.create_task(pace.watch())
        await asyncio.sleep(0)
        pace.call(time.sleep, hub_workers.LATE_S * 2)
        seen = [pace.keeping_up]
        await asyncio.sleep(hub_workers.TICK_S * 1.5)  # one tick
        seen.append(pace.keeping_up)
        watching.cancel()
        return seen

    assert asyncio.run(main()) == [False, False]


@pytest.fixture
def slow_seqs(monkeypatch: pytest.MonkeyPatch) -> None:
    """No tick after the first (the calls alone move the pace), and ``GET .../seqs``
    that holds the loop's CPU for 50 ms."""
    monkeypatch.setattr(hub_workers, "TICK_S", 1000.0)
    real = Handlers.get_seqs

    def get_seqs(self: Handlers, ctx: Any) -> Any:
        started = time.thread_time()
        while time.thread_time() - started < 0.05:
            pass
        return real(self, ctx)

    monkeypatch.setattr(Handlers, "get_seqs", get_seqs)


def test_a_read_that_holds_the_loop_sends_the_next_calls_to_threads(
    slow_seqs: None, counted: Counted, fast: bool
) -> None:
    counted.clear()
    assert counted.request("GET", what="seqs") == 200  # fast: on the loop, it kept up
    assert counted.request("GET", what="seqs") == 200
    assert counted.request("GET") == 404
    if fast:
        assert (counted.workers, counted.threadpool) == (["get_seqs", "get_chunk"], [])
    else:
        assert (counted.workers, counted.threadpool) == ([], ["get_seqs", "get_seqs", "get_chunk"])


@pytest.mark.slow
@pytest.mark.parametrize("blobs_url", ["s3"], indirect=True)
def test_no_call_runs_on_the_loop_over_s3_blobs(
    counted: Counted, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hub_workers, "LATE_S", math.inf)  # the loop keeps up
    counted.clear()
    assert counted.request("PUT") == 201
    assert counted.request("GET") == 200
    assert counted.request("GET", what="seqs") == 200
    hops = ["gate", "put_chunk", "get_chunk", "get_seqs"]
    assert (counted.workers, counted.threadpool) == ((hops, []) if fast else ([], hops))


def test_each_blocking_call_takes_one_hop_on_the_path_s_threads(
    counted: Counted, fast: bool, keeping_up: bool
) -> None:
    counted.clear()
    assert counted.request("PUT") == 201
    assert counted.request("GET") == 200
    assert counted.request("GET", what="seqs") == 200
    hops = ["gate", "put_chunk", "get_chunk", "get_seqs"]
    if fast and keeping_up:
        assert (counted.workers, counted.threadpool) == (["put_chunk"], [])
    else:
        assert (counted.workers, counted.threadpool) == ((hops, []) if fast else ([], hops))
    assert counted.routed == ([] if fast else [hubapi.CHUNK, hubapi.CHUNK, hubapi.SEQS])


def test_a_refused_upload_takes_its_hops_and_stores_nothing(
    counted: Counted, fast: bool, keeping_up: bool
) -> None:
    counted.clear()
    key = counted.world.nodes["alice"].key
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{chunk_id(SUITE, b'other')}"
    answer = counted.client.put(path, headers=sign(key, "PUT", path, DATA), content=DATA)
    assert answer.status_code == 422
    # the gate (on the loop if it keeps up), the handler
    assert len(counted.workers + counted.threadpool) == (1 if fast and keeping_up else 2)
    assert counted.storage.chunk_rows(None, 10) == []


def test_a_row_whose_blob_is_gone_is_dropped_before_the_404(
    counted: Counted, fast: bool, keeping_up: bool
) -> None:
    assert counted.request("PUT") == 201
    ((key, _),) = [(k, v) for k, v in counted.storage.chunk_rows(None, 10)]
    key = BlobKey(TEAM, PROJECT, key.writer, chunk_id(SUITE, DATA))
    counted.storage.blobs.delete(key)
    assert counted.storage.chunk_rows_named([key]) == {key}
    counted.clear()
    assert counted.request("GET") == 404
    # the read (on the loop if it keeps up), then its heal in a thread
    hops = counted.workers + counted.threadpool
    assert hops == (["drop_blobless"] if fast and keeping_up else ["get_chunk", "drop_blobless"])
    assert counted.storage.chunk_rows_named([key]) == set()
    assert counted.request("GET") == 404


@pytest.mark.parametrize(("options", "serves_fast"), [([], True), (["--plain"], False)])
def test_hub_serve_plain_serves_the_plain_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str], serves_fast: bool
) -> None:
    served: list[HubConfig] = []
    monkeypatch.setattr(server, "serve", served.append)
    assert main(["hub", "serve", "--data", str(tmp_path / "hub"), *options]) == 0
    assert [c.fast for c in served] == [serves_fast]
