"""A PUT's signature headers are parsed once: the gate (before the body) reads them and
verifies the signature over the digest header, and the handler (after it) checks the
body against that digest with what the gate read; the time is checked again, and the
team's state read again, after the body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import sealmem.hub.auth as hub_auth
from sealmem.crypto import SUITE
from sealmem.protocol import hubapi
from sealmem.protocol.snapshot import chunk_id

from .conftest import IN_PROCESS_URL, PROJECT, TEAM, HubWorld, InProcess, now_ms, signed


@pytest.fixture
def world(tmp_path: Path, inproc: InProcess) -> tuple[TestClient, HubWorld]:
    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, IN_PROCESS_URL, inproc.transport)
    w.create()
    w.join("alice")
    return inproc.client, w


def test_a_put_reads_its_signature_headers_once(
    world: tuple[TestClient, HubWorld], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, w = world
    calls: list[int] = []
    real = hub_auth.read_signature

    def counted(headers: Any) -> hub_auth.Signed:
        calls.append(1)
        return real(headers)

    monkeypatch.setattr(hub_auth, "read_signature", counted)
    key = w.nodes["alice"].key
    data = b"a chunk whose headers are read once"
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{chunk_id(SUITE, data)}"
    answer = client.put(path, headers=signed(key, "PUT", path, data), content=data)
    assert answer.status_code == 201
    assert len(calls) == 1


def test_a_put_whose_time_left_the_window_while_its_body_came_is_refused(
    world: tuple[TestClient, HubWorld], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate accepts the time; by the handler the hub clock moved past the window."""
    client, w = world
    key = w.nodes["alice"].key
    data = b"a chunk that arrives too late"
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{chunk_id(SUITE, data)}"
    sent = now_ms()
    real = hub_auth.ReplayGuard.check_time
    seen: list[int] = []

    def later(self: hub_auth.ReplayGuard, time_ms: int, now: int) -> None:
        seen.append(now)
        # the second check (after the body) sees a clock past the window
        real(self, time_ms, now if len(seen) == 1 else now + 2 * self.window_ms + 1000)

    monkeypatch.setattr(hub_auth.ReplayGuard, "check_time", later)
    answer = client.put(path, headers=signed(key, "PUT", path, data, now=sent), content=data)
    assert answer.status_code == 401
    assert answer.json()["error"] == hubapi.STALE_TIME
    assert len(seen) == 2
