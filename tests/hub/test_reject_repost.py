"""On a real hub: a rejected joiner that posts its request bytes again is not approved."""

from __future__ import annotations

import time

import httpx
import pytest

from sealmem.client.team.invite import make_join_request, read_invite
from sealmem.crypto import MemberKey
from tests.hub.conftest import TOKEN, BackgroundHub, hub
from tests.sync.test_approve_bound import Cli, _join, _members, cli

__all__ = ["cli", "hub"]  # fixtures, re-exported for pytest
pytestmark = pytest.mark.slow


def test_a_rejected_joiner_posting_again_is_not_approved(cli: Cli, hub: BackgroundHub) -> None:
    cli("admin", "team", "create", "acme", "--hub", hub.url, "--operator-token", TOKEN)
    text = str(cli("admin", "team", "invite", "--json").json()["invite"])
    inv = read_invite(text, now=time.time_ns() // 1_000_000)
    alice = _join(cli, text, "alice")
    mallory = MemberKey.generate()  # a stranger holding the (leaked) invite
    body = make_join_request(
        mallory, team=inv.team, name="mallory", invite_id=inv.invite_id,
        now=time.time_ns() // 1_000_000,
    )  # fmt: skip
    url = f"{hub.url}/v1/teams/{inv.team}/requests/{mallory.kid}"
    assert httpx.post(url, content=body).status_code == 201
    cli("admin", "admin", "requests")  # the admin sees alice and mallory...
    cli("admin", "admin", "reject", mallory.kid)  # ...and rejects mallory
    assert httpx.post(url, content=body).status_code == 201  # the same bytes again
    done = cli("admin", "admin", "approve", "--yes", "--json").json()
    assert [a["kid"] for a in done["approved"]] == [alice["kid"]]
    assert mallory.kid not in _members(cli)
    assert "rejected before" in cli("admin", "admin", "requests").out
