"""Writes under faults, on the real app and real SQLite files: a write that raises what a
future cannot carry (StopIteration) or what would stop the event loop (SystemExit) is
answered with a JSON 500, the writes arriving beside it (sharing its group commit) are
answered and stored as alone, and the next PUT is served, for a small chunk and for a
large one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import SUITE, MemberKey
from sealmem.hub.http.app import create_app
from sealmem.protocol.snapshot import chunk_id

from .conftest import (
    IN_PROCESS_URL,
    PROJECT,
    TEAM,
    TOKEN,
    HubWorld,
    InProcess,
    hub_config,
    signed,
)

#: a chunk larger than a bucket of a snapshot (tens of KiB)
BATCHED_CHUNK_BYTES = 256 * 1024

#: a PUT's answer must come well within this (a hang fails the test, not the run)
ANSWER_S = 20.0


@dataclass
class Team:
    hub: InProcess
    alice: MemberKey


@pytest.fixture
def team(inproc: InProcess, tmp_path: Path) -> Iterator[Team]:
    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(
        homes,
        IN_PROCESS_URL,
        lambda k: HubTransport(IN_PROCESS_URL, TEAM, k, operator_token=TOKEN, client=inproc.client),
    )
    world.create()
    (alice,) = world.join("alice")
    try:
        yield Team(inproc, alice.key)
    finally:
        world.close()


def _path(key: MemberKey, data: bytes) -> str:
    return f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{chunk_id(SUITE, data)}"


async def _put(client: httpx.AsyncClient, key: MemberKey, data: bytes) -> httpx.Response:
    path = _path(key, data)
    request = client.put(path, headers=signed(key, "PUT", path, data), content=data)
    return await asyncio.wait_for(request, ANSWER_S)


def _failing_on(
    team: Team, monkeypatch: pytest.MonkeyPatch, bad: bytes, error: Callable[[], BaseException]
) -> None:
    """The storage's chunk write raises ``error()`` for the chunk ``bad`` (a bug)."""
    store = team.hub.storage
    real = store.put_chunk

    def put_chunk(
        t: str, p: str, w: str, cid: str, data: bytes, now_ms: int, check: Any = None
    ) -> bool:
        if data == bad:
            raise error()
        return real(t, p, w, cid, data, now_ms, check)

    monkeypatch.setattr(store, "put_chunk", put_chunk)


@pytest.mark.slow
@pytest.mark.parametrize(
    "error",
    [lambda: StopIteration("a bug"), lambda: SystemExit(3)],
    ids=["StopIteration", "SystemExit"],
)
@pytest.mark.parametrize("size", [64, BATCHED_CHUNK_BYTES + 1], ids=["small", "large"])
def test_a_write_raising_what_a_future_cannot_carry_is_a_500_and_the_others_are_served(
    team: Team,
    monkeypatch: pytest.MonkeyPatch,
    error: Callable[[], BaseException],
    size: int,
) -> None:
    bad = b"b" * size
    good = [bytes([i]) * 64 for i in range(1, 9)]
    _failing_on(team, monkeypatch, bad, error)

    async def main() -> tuple[list[httpx.Response], httpx.Response]:
        async with team.hub.asgi() as client:  # this loop, beside the TestClient's
            # queued together: the good ones share the bad one's batch
            answers = await asyncio.gather(*(_put(client, team.alice, d) for d in [bad, *good]))
            after = await _put(client, team.alice, b"after" * 10)
        return list(answers), after

    answers, after = asyncio.run(main())
    assert answers[0].status_code == 500
    assert answers[0].json()["error"] == "internal"
    assert [a.status_code for a in answers[1:]] == [201] * len(good)
    assert after.status_code == 201
    store = team.hub.storage
    for data in [*good, b"after" * 10]:
        assert store.chunk(TEAM, PROJECT, team.alice.kid, chunk_id(SUITE, data)) == data
    assert store.chunk(TEAM, PROJECT, team.alice.kid, chunk_id(SUITE, bad)) is None


def test_quota_refusals_inside_a_batch_store_nothing_and_leave_the_others(
    tmp_path: Path,
) -> None:
    """Chunks queued together that pass a member's quota only together: each is judged
    on the usage the writes before it in its batch left (uncommitted), exactly as one by
    one; a refused one (507) leaves no row, no usage and no blob of its own."""
    size, fit, sent = 1000, 5, 12
    data_dir = tmp_path / "hub-data"
    app = create_app(hub_config(data_dir, member_quota_bytes=size * fit))
    homes = tmp_path / "homes"
    homes.mkdir()
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        hub = InProcess(app, client, data_dir)
        world = HubWorld(homes, IN_PROCESS_URL, lambda k: hub.transport(k))
        world.create()
        (alice,) = world.join("alice")
        chunks = [bytes([i]) * size for i in range(sent)]

        async def main() -> list[httpx.Response]:
            async with hub.asgi() as asgi:
                return list(await asyncio.gather(*(_put(asgi, alice.key, d) for d in chunks)))

        store = hub.storage
        answers = asyncio.run(main())  # the 11 after the first share 2 or 3 commits
        stored = [d for d, a in zip(chunks, answers, strict=True) if a.status_code == 201]
        assert sorted(a.status_code for a in answers) == [201] * fit + [507] * (sent - fit)
        assert store.member_usage(TEAM, alice.key.kid) == size * fit
        for data in chunks:
            held = store.chunk(TEAM, PROJECT, alice.key.kid, chunk_id(SUITE, data))
            assert held == (data if data in stored else None)
        blobs = [p for p in (data_dir / "blobs").rglob("*") if p.is_file()]
        assert len(blobs) == fit
        world.close()
