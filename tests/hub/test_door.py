"""The team's door on a real hub app: what a stranger's join post buys (roster v1 and its
own request's state, nothing more), limits per address and per team, expiry, and a
flooded inbox that the admin sees and the real joiner is told how to get past."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from sealmem.client.sync.hub import HubError, HubTransport
from sealmem.client.team.admin import invite
from sealmem.client.team.approval import approve
from sealmem.client.team.invite import make_join_request, read_invite
from sealmem.crypto import MemberKey
from sealmem.hub.http.app import create_app
from sealmem.hub.storage.sqlite import SQLiteStorage

from .conftest import IN_PROCESS_URL, TEAM, TOKEN, HubWorld, hub_config, now_ms, signed

DAY_MS = 24 * 60 * 60 * 1000

ANY_INVITE = "A" * 22  # the hub cannot know invites: any well-formed id will do


class Clock:
    """The hub's clock, moved by the test (clients sign with it too)."""

    def __init__(self) -> None:
        self.now = now_ms()

    def __call__(self) -> int:
        return self.now


@dataclass
class Door:
    app: Starlette
    client: TestClient
    clock: Clock
    world: HubWorld
    invite_id: str = ANY_INVITE

    def transport(self, key: MemberKey, address: str = "testclient") -> HubTransport:
        client = self.client if address == "testclient" else self.at(address)
        return HubTransport(
            IN_PROCESS_URL, TEAM, key, operator_token=TOKEN, client=client, clock=self.clock
        )

    def at(self, address: str) -> TestClient:
        """Requests from another client address (the same app, no second lifespan)."""
        return TestClient(self.app, base_url=IN_PROCESS_URL, client=(address, 50000))

    def post(self, key: MemberKey, address: str = "testclient", name: str = "stranger") -> int:
        body = make_join_request(
            key, team=TEAM, name=name, invite_id=self.invite_id, now=self.clock()
        )
        path = f"/v1/teams/{TEAM}/requests/{key.kid}"
        answer = self.at(address).post(path, content=body)
        return answer.status_code

    def get(self, key: MemberKey, target: str) -> tuple[int, dict[str, object]]:
        path = f"/v1/teams/{TEAM}{target}"
        answer = self.client.get(path, headers=signed(key, "GET", path, now=self.clock()))
        return answer.status_code, answer.json()


def _door(tmp_path: Path, **settings: object) -> Iterator[Door]:
    clock = Clock()
    app = create_app(hub_config(tmp_path / "hub-data", **settings), clock=clock)
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        homes = tmp_path / "homes"
        homes.mkdir()
        door = Door(
            app, client, clock, HubWorld(homes, IN_PROCESS_URL, lambda k: door.transport(k))
        )
        door.world.create()
        door.world.join("alice")
        admin = door.world.nodes["admin"].t
        door.invite_id = read_invite(invite(admin, now_ms()), now=now_ms()).invite_id
        try:
            yield door
        finally:
            door.world.close()


@pytest.fixture
def door(tmp_path: Path) -> Iterator[Door]:
    yield from _door(tmp_path)


def test_a_strangers_join_post_buys_roster_v1_and_its_own_state_only(door: Door) -> None:
    stranger = MemberKey.generate()
    assert door.post(stranger) == 201
    status, doc = door.get(stranger, "/rosters?after=0")
    assert status == 200
    assert len(doc["rosters"]) == 1  # type: ignore[arg-type]  # v1: not v2, naming alice
    assert door.get(stranger, "/rosters?after=1") == (200, {"rosters": []})
    assert door.get(stranger, f"/requests/{stranger.kid}") == (200, {"status": "pending"})
    # nothing else: not another request's state, not the join inbox, keyrings or the feed
    alice = door.world.nodes["alice"].key.kid
    for target in (f"/requests/{alice}", "/requests", "/keyrings/webapp", "/changes"):
        status, doc = door.get(stranger, target)
        assert (status, doc["error"]) in {(401, "unknown-key"), (403, "not-admin")}, target
    # approved, it reads as a member
    admin = door.world.nodes["admin"].t
    approve(admin, [stranger.kid], projects=None, read=True, write=True, now=now_ms())
    status, doc = door.get(stranger, f"/requests/{stranger.kid}")
    assert (status, doc["status"]) == (200, "approved")
    status, doc = door.get(stranger, "/rosters?after=0")
    assert len(doc["rosters"]) == 3  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_pending_joiner_syncs_without_reading_the_team(
    door: Door, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sealmem.hub.access")
    carol = door.world.node("carol")
    carol.team = door.world._team(carol, door.world.nodes["admin"].key)
    carol.t.transport.post_request(
        carol.key.kid,
        make_join_request(
            carol.key, team=TEAM, name="carol", invite_id=door.invite_id, now=now_ms()
        ),
    )
    summary = carol.sync()
    assert any("waiting for an admin to approve" in w for w in summary.warnings)
    mine = [r.getMessage() for r in caplog.records if f"member={carol.key.kid}" in r.getMessage()]
    assert mine
    assert not [m for m in mine if "/rosters" in m]  # no roster history read while pending
    assert carol.t.trusted().roster is None

    admin = door.world.nodes["admin"].t
    approve(admin, [carol.key.kid], projects=None, read=True, write=True, now=now_ms())
    summary = carol.sync()
    assert not [w for w in summary.warnings if "approve" in w]
    roster = carol.t.trusted().roster
    assert roster is not None
    assert roster.member(carol.key.kid) is not None


def test_malformed_join_posts_are_counted_for_the_admins(door: Door) -> None:
    """Every refusal after the team is known is counted (SPEC "Messages"): a stranger's
    junk posts and a request signed by another key than its path's were refused
    unseen, while only the rate and inbox refusals reached the admins' counters."""
    stranger, other = MemberKey.generate(), MemberKey.generate()
    path = f"/v1/teams/{TEAM}/requests/{stranger.kid}"
    assert door.client.post(path, content=b"not a join request").status_code == 422
    signed_by_other = make_join_request(
        other, team=TEAM, name="x", invite_id=door.invite_id, now=door.clock()
    )
    assert door.client.post(path, content=signed_by_other).status_code == 422
    status, doc = door.get(door.world.nodes["admin"].key, "/requests")
    assert status == 200
    refused = doc["door"]["refused"]  # type: ignore[index]
    assert sum(refused["by_code"].values()) == 2, refused
    assert refused["last_at"] is not None


@pytest.mark.slow
def test_join_posts_are_limited_per_team_with_retry_after(door: Door) -> None:
    # the default door: 30 posts in a burst to one team, whatever their addresses
    codes = [door.post(MemberKey.generate(), f"10.0.{i // 200}.{i % 200}") for i in range(40)]
    assert codes[:29] == [201] * 29  # each from its own address (alice's join took one)
    assert set(codes[29:]) == {201, 429} or set(codes[29:]) == {429}  # 1 token per 2 s
    assert codes.count(201) <= 31
    body = make_join_request(
        key := MemberKey.generate(), team=TEAM, name="x", invite_id=ANY_INVITE, now=1
    )
    answer = door.at("10.9.9.9").post(f"/v1/teams/{TEAM}/requests/{key.kid}", content=body)
    assert (answer.status_code, answer.json()["error"]) == (429, "team-rate-limited")
    assert int(answer.headers["retry-after"]) >= 1
    assert "retry in" in answer.json()["detail"]
    status, doc = door.get(door.world.nodes["admin"].key, "/requests")
    assert status == 200
    refused = {"team-rate-limited": codes.count(429) + 1}
    assert doc["door"]["refused"]["by_code"] == refused  # type: ignore[index]


def test_pending_requests_expire_and_free_their_slot(tmp_path: Path) -> None:
    for door in _door(tmp_path, max_pending_requests=1):
        carol, dave = MemberKey.generate(), MemberKey.generate()
        admin = door.world.nodes["admin"].t.transport
        assert door.post(carol) == 201
        assert door.post(carol) == 201  # a re-post replaces its own request: no extra slot
        assert door.post(dave, "10.0.0.2") == 507  # the one slot is carol's
        door.clock.now += 7 * DAY_MS - 1
        assert list(admin.requests()) == [carol.kid]
        door.clock.now += 1  # seven days after carol's last post
        assert admin.requests() == {}
        # a key the hub no longer knows: the 401 of every route, not a 404 (no oracle)
        status, doc = door.get(carol, f"/requests/{carol.kid}")
        assert (status, doc["error"]) == (401, "unknown-key")
        assert door.get(carol, "/rosters")[1]["error"] == "unknown-key"
        pending = door.transport(carol)
        assert pending.join_status(carol.kid) == "unknown"
        assert door.post(dave, "10.0.0.2") == 201  # the expired one holds no slot
        assert list(admin.requests()) == [dave.kid]


def test_a_flood_cannot_silently_block_a_real_join(tmp_path: Path) -> None:
    for door in _door(tmp_path, max_pending_requests=6, max_pending_per_address=3):
        # one address fills only its share
        assert [door.post(MemberKey.generate(), "203.0.113.7") for _ in range(4)] == [
            201, 201, 201, 507,
        ]  # fmt: skip
        flood = [door.post(MemberKey.generate(), "203.0.113.8") for _ in range(3)]
        assert flood == [201, 201, 201]  # the inbox is now full

        real = MemberKey.generate()
        joiner = door.transport(real, "192.0.2.50")
        request = make_join_request(
            real, team=TEAM, name="erin", invite_id=ANY_INVITE, now=now_ms()
        )
        with pytest.raises(HubError) as info:
            joiner.post_request(real.kid, request)
        assert (info.value.status, info.value.code) == (507, "inbox-full")
        assert "sealmem admin reject" in str(info.value)  # the client's words for the code
        assert "sealmem admin approve" in str(info.value)

        admin = door.world.nodes["admin"].t.transport
        waiting = admin.requests()
        assert len(waiting) == 6
        told = " | ".join(admin.take_warnings())
        assert "holds 6 of 6 requests" in told
        assert "refused 2 join post(s)" in told  # one address cap, one full inbox
        assert "inbox-full" in told
        assert "inbox-full-for-address" in told
        status, doc = door.get(door.world.nodes["admin"].key, "/requests")
        assert status == 200
        refused = doc["door"]["refused"]["by_code"]  # type: ignore[index]
        assert refused == {"inbox-full": 1, "inbox-full-for-address": 1}

        admin_team = door.world.nodes["admin"].t
        alarms = admin_team.alarms(admin_team.roster())  # what 'sealmem team status' shows
        assert any("holds 6 of 6 requests" in a for a in alarms)

        # the admin clears the flood; the real joiner gets in
        for kid in waiting:
            admin.remove_request(kid)
        joiner.post_request(real.kid, request)
        assert list(admin.requests()) == [real.kid]


def test_a_request_posted_at_the_bound_has_expired(tmp_path: Path) -> None:
    storage = SQLiteStorage(tmp_path / "hub")
    try:
        limits = {"max_pending": 4, "max_per_address": 4}
        storage.offer_request("t", "k", b"\x00", "10.0.0.2", 5, live_after_ms=0, **limits)
        found = storage.requests("t", 0)
        assert [(r.kid, r.posted_at) for r in found] == [("k", 5)]
        assert storage.requests("t", 5) == []  # posted at or before the bound: expired
        seen = storage.offer_request("t", "j", b"\x01", "10.0.0.1", 9, live_after_ms=5, **limits)
        assert (seen.stored, seen.pending, seen.from_address) == (True, 1, 1)
        assert [r.kid for r in storage.requests("t", 5)] == ["j"]  # the expired one is gone
    finally:
        storage.close()
