"""A chunk PUT whose checks passed just before its writer was revoked: the write, run
after the revocation committed, is refused (403 ``revoked``) and stores nothing.  The
revocation is published while the PUT waits for its write (between the two), over the
same real hub."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from sealmem.client.team import admin
from sealmem.crypto import SUITE
from sealmem.hub.workers import Batcher
from sealmem.protocol.snapshot import chunk_id

from .conftest import PROJECT, TEAM, HubWorld, now_ms, signed

pytestmark = pytest.mark.slow


def test_a_chunk_checked_before_a_revocation_is_not_stored_after_it(
    world: HubWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    real = Batcher.run
    reached, go = threading.Event(), threading.Event()

    async def hold_first(self: Batcher, fn: Callable[[], Any]) -> Any:
        if not reached.is_set():  # the first write queued: alice's chunk, already checked
            reached.set()
            await asyncio.to_thread(go.wait, 30)
        return await real(self, fn)

    monkeypatch.setattr(Batcher, "run", hold_first)
    data = b"a chunk from alice, checked before her revocation"
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{alice.key.kid}/{chunk_id(SUITE, data)}"
    answers: list[httpx.Response] = []
    put = threading.Thread(
        target=lambda: answers.append(
            httpx.put(
                world.location + path,
                headers=signed(alice.key, "PUT", path, data),
                content=data,
                timeout=30,
            )
        )
    )
    put.start()
    try:
        assert reached.wait(30)
        admin.revoke(adm.t, "alice", keep_data=True, now=now_ms())  # committed meanwhile
    finally:
        go.set()
        put.join(30)
    assert answers[0].status_code == 403, answers[0].text
    assert answers[0].json()["error"] == "revoked"
    read = httpx.get(world.location + path, headers=signed(adm.key, "GET", path))
    assert read.status_code == 404  # nothing stored
