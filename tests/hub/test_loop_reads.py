"""Where the storage's reads are local (SQLite), a signed request that only reads
metadata is served on the event loop and a body's headers-only gate too: a GET
takes no worker-thread hop and a PUT one (its write, to the committer thread, which
runs the writes queued together in one transaction), where a networked backend takes
one per storage call (a GET one, a PUT two).  A chunk read from local blob files takes
none either; the drop of a row whose blob is gone (a write) takes one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import sealmem.hub.app as hub_app
from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import SUITE
from sealmem.hub.routes import BATCHED_CHUNK_BYTES
from sealmem.hub.storage.blobs import BlobKey
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.hub.workers import Batcher, Workers
from sealmem.protocol.snapshot import chunk_id

from .conftest import IN_PROCESS_URL, PROJECT, TEAM, TOKEN, HubWorld, hub_config, signed

pytestmark = pytest.mark.slow

Hops = Callable[[Callable[[TestClient, HubWorld], object]], int]
#: the hops of the last count: worker calls by function name, "committer" for a batch
seen_hops: list[str] = []
DATA = b"an encrypted chunk, as far as the hub can tell"


@pytest.fixture(params=[True, False], ids=["local-reads", "networked"])
def hops(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[bool, Hops, SQLiteStorage]]:
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
        real = Workers.run

        async def counted(self: Workers, fn: Callable[..., Any], *args: Any) -> Any:
            calls.append(getattr(fn, "__name__", "?"))
            return await real(self, fn, *args)

        monkeypatch.setattr(Workers, "run", counted)
        batched = Batcher.run

        async def counted_batch(self: Batcher, fn: Callable[[], Any]) -> Any:
            calls.append("committer")
            return await batched(self, fn)

        monkeypatch.setattr(Batcher, "run", counted_batch)

        def count(action: Callable[[TestClient, HubWorld], object]) -> int:
            calls.clear()
            action(client, world)
            seen_hops[:] = calls
            return len(calls)

        yield local, count, store


def _get_seqs(client: TestClient, world: HubWorld) -> None:
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/seqs"
    answer = client.get(path, headers=signed(world.nodes["alice"].key, "GET", path))
    assert answer.status_code == 200


def _put_chunk(client: TestClient, world: HubWorld) -> None:
    key = world.nodes["alice"].key
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{chunk_id(SUITE, DATA)}"
    answer = client.put(path, headers=signed(key, "PUT", path, DATA), content=DATA)
    assert answer.status_code == 201


BIG = b"x" * (BATCHED_CHUNK_BYTES + 1)


def _put_big_chunk(client: TestClient, world: HubWorld) -> None:
    key = world.nodes["alice"].key
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{chunk_id(SUITE, BIG)}"
    answer = client.put(path, headers=signed(key, "PUT", path, BIG), content=BIG)
    assert answer.status_code == 201


def _get_chunk(status: int) -> Callable[[TestClient, HubWorld], None]:
    def get(client: TestClient, world: HubWorld) -> None:
        key = world.nodes["alice"].key
        path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{chunk_id(SUITE, DATA)}"
        answer = client.get(path, headers=signed(key, "GET", path))
        assert answer.status_code == status
        if status == 200:
            assert answer.content == DATA

    return get


def test_a_signed_read_takes_no_threadpool_hop_on_local_storage(
    hops: tuple[bool, Hops, SQLiteStorage],
) -> None:
    local, count, _ = hops
    assert count(_get_seqs) == (0 if local else 1)


def test_a_signed_upload_takes_one_threadpool_hop_on_local_storage(
    hops: tuple[bool, Hops, SQLiteStorage],
) -> None:
    local, count, store = hops
    before = store.commits
    assert count(_put_chunk) == (1 if local else 2)
    commits, writes = store.commits
    assert (commits - before[0], writes - before[1]) == (1, 1)  # one write, committed
    expected = ["committer"] if local else ["?", "_finish"]  # "?": the gate, a partial
    assert seen_hops == expected


def test_a_large_chunk_takes_a_worker_of_its_own_not_the_committer(
    hops: tuple[bool, Hops, SQLiteStorage],
) -> None:
    """Megabytes to fsync would hold up the small writes queued behind it in a batch."""
    local, count, store = hops
    assert count(_put_big_chunk) == (1 if local else 2)
    expected = ["store"] if local else ["?", "_finish"]
    assert seen_hops == expected
    assert store.chunk(TEAM, PROJECT, store_writer(store), chunk_id(SUITE, BIG)) == BIG


def test_a_chunk_read_from_local_blobs_takes_no_hop(
    hops: tuple[bool, Hops, SQLiteStorage],
) -> None:
    local, count, _ = hops
    count(_put_chunk)
    assert count(_get_chunk(200)) == (0 if local else 1)


def test_a_row_whose_blob_is_gone_is_dropped_in_a_worker_before_the_404(
    hops: tuple[bool, Hops, SQLiteStorage],
) -> None:
    """The heal writes: on the loop path it is the one hop of the request."""
    local, count, store = hops
    count(_put_chunk)
    key = BlobKey(TEAM, PROJECT, store_writer(store), chunk_id(SUITE, DATA))
    store.blobs.delete(key)
    assert store.chunk_rows_named([key]) == {key}
    assert count(_get_chunk(404)) == (1 if local else 2)
    assert store.chunk_rows_named([key]) == set()
    assert count(_get_chunk(404)) == (0 if local else 1)


def store_writer(store: SQLiteStorage) -> str:
    """The one writer whose chunk the tests put (alice)."""
    rows = store.chunk_rows(None, 10)
    return rows[0][0].writer


def _put_wrong_id(client: TestClient, world: HubWorld) -> None:
    key = world.nodes["alice"].key
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{chunk_id(SUITE, b'other')}"
    answer = client.put(path, headers=signed(key, "PUT", path, DATA), content=DATA)
    assert answer.status_code == 422


def test_an_upload_is_checked_on_the_loop_and_only_its_write_takes_a_hop(
    hops: tuple[bool, Hops, SQLiteStorage],
) -> None:
    """A PUT authenticates and checks on the event loop: refused there, it never takes
    a worker thread; accepted, its write is its one hop (see the upload test above)."""
    local, count, _ = hops
    assert count(_put_wrong_id) == (0 if local else 2)
