"""A chunk PUT whose checks passed just before its writer was revoked: the write, run
after the revocation committed, is refused (403 ``revoked``) and stores nothing.  The
revocation is published while the PUT waits for its write (after its checks, and after
the blob was written, before the row's transaction), over the same real hub."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from sealmem.client.team import admin
from sealmem.crypto import SUITE
from sealmem.hub.http import routes
from sealmem.hub.storage.blobs import BlobDir
from sealmem.protocol.snapshot import chunk_id

from .conftest import BOTH_PATHS, PROJECT, TEAM, HubWorld, now_ms, signed

pytestmark = [pytest.mark.slow, BOTH_PATHS]


def _hold_first(real: Any) -> tuple[Any, threading.Event, threading.Event]:
    reached, go = threading.Event(), threading.Event()

    def hold_first(*args: Any) -> None:
        real(*args)
        if not reached.is_set():  # alice's chunk, past this step; then the rest of it
            reached.set()
            go.wait(30)

    return hold_first, reached, go


@pytest.mark.parametrize("at", ["checks", "blob"])
def test_a_chunk_checked_before_a_revocation_is_not_stored_after_it(
    world: HubWorld, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    if at == "checks":
        hold_first, reached, go = _hold_first(routes.check_quota)
        monkeypatch.setattr(routes, "check_quota", hold_first)
    else:  # the blob is written after every check the handler makes before the row
        hold_first, reached, go = _hold_first(BlobDir.put)
        monkeypatch.setattr(BlobDir, "put", hold_first)
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
