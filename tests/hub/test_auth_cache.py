"""The hub looks a member's key and role up once per roster; a new roster is seen at once.

Over the app in process: a member served a moment ago is refused (403 ``revoked``)
by the very next request once an admin's roster revokes it, and a member approved
since is served, whatever the hub looked up under the roster before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client.team.admin import revoke

from .conftest import PROJECT, TEAM, HubWorld, InProcess, now_ms, signed

SEQS = f"/v1/teams/{TEAM}/projects/{PROJECT}/seqs"


@pytest.fixture
def acme(tmp_path: Path, inproc: InProcess) -> Iterator[HubWorld]:
    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(homes, "http://hub.test", inproc.transport)
    world.create()
    world.join("alice")
    try:
        yield world
    finally:
        world.close()


def _status(inproc: InProcess, world: HubWorld, name: str) -> tuple[int, str | None]:
    key = world.nodes[name].key
    answer = inproc.client.get(SEQS, headers=signed(key, "GET", SEQS))
    return answer.status_code, answer.json().get("error")


def test_a_revocation_is_seen_by_the_next_request(inproc: InProcess, acme: HubWorld) -> None:
    for _ in range(3):  # looked up, then served from what the hub keeps
        assert _status(inproc, acme, "alice") == (200, None)
    revoke(acme.nodes["admin"].t, "alice", keep_data=False, now=now_ms())
    assert _status(inproc, acme, "alice") == (403, "revoked")


def test_a_member_approved_later_is_served(inproc: InProcess, acme: HubWorld) -> None:
    assert _status(inproc, acme, "alice") == (200, None)
    acme.join("bob")
    assert _status(inproc, acme, "bob") == (200, None)
    assert _status(inproc, acme, "alice") == (200, None)
