"""The hub API in process: registration, verification of what is stored, limits, errors,
the join inbox and the access log."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from sealmem.client.store import writes
from sealmem.client.sync.folder import FolderTransport
from sealmem.client.sync.hub import HubError, HubTransport, open_transport
from sealmem.client.sync.transport import ConflictError, MissingChunks
from sealmem.client.team.invite import make_join_request
from sealmem.crypto import SUITE, ContentKey, MemberKey
from sealmem.hub.http.app import create_app
from sealmem.protocol import canonical, snapshot
from sealmem.protocol.admin import genesis
from sealmem.protocol.encoding import b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.errors import InputError
from sealmem.protocol.invite import JOIN_FORMAT
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.manifest import peek
from sealmem.protocol.roster import Member
from sealmem.protocol.snapshot import MIN_BUCKETS, bucket_of, chunk_id

from .conftest import (
    BOTH_PATHS,
    IN_PROCESS_URL,
    PROJECT,
    TEAM,
    TOKEN,
    HubWorld,
    InProcess,
    hub_config,
    now_ms,
    signed,
)

pytestmark = BOTH_PATHS

ANY_INVITE = "A" * 22  # the hub cannot know invites: any well-formed id passes


def _roster_v1(key: MemberKey, team: str = TEAM) -> bytes:
    me = Member(key.kid, "root", key.sign_public, key.box_public, "admin")
    return genesis(SUITE, team, me, created_at=1, projects=[PROJECT]).sign(key)


def _register(client: TestClient, key: MemberKey, token: str | None, team: str = TEAM) -> int:
    path = f"/v1/teams/{team}/rosters/1"
    body = json.dumps({"roster": b64e(_roster_v1(key, team)), "keyrings": []}).encode()
    headers = signed(key, "PUT", path, body)
    if token is not None:
        headers["sealmem-operator-token"] = token
    return client.put(path, headers=headers, content=body).status_code


def test_registration_is_the_operators_choice(tmp_path: Path, fast: bool) -> None:
    token = "a-long-operator-token-0123456789"
    listed = frozenset({"listed-team"})
    app = create_app(
        hub_config(tmp_path / "a", operator_token=token, allow_teams=listed, fast=fast)
    )
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        root = MemberKey.generate()
        assert _register(client, root, None) == 403  # registration-closed without the token
        assert _register(client, root, "wrong-token-0123456789") == 401
        assert _register(client, root, token) == 201
        assert _register(client, root, token) == 200  # the same v1 again: idempotent
        assert _register(client, MemberKey.generate(), token) == 401  # a stranger's v1
        assert _register(client, MemberKey.generate(), None, "listed-team") == 201
    closed = create_app(hub_config(tmp_path / "b", operator_token=None, fast=fast))
    with TestClient(closed, base_url=IN_PROCESS_URL) as client:
        response_code = _register(client, MemberKey.generate(), token)
        assert response_code == 403


def test_v1_must_be_published_by_its_signer(inproc: InProcess) -> None:
    root, other = MemberKey.generate(), MemberKey.generate()
    path = f"/v1/teams/{TEAM}/rosters/1"
    body = json.dumps({"roster": b64e(_roster_v1(root)), "keyrings": []}).encode()
    headers = {**signed(other, "PUT", path, body), "sealmem-operator-token": "x" * 40}
    response = inproc.client.put(path, headers=headers, content=body)
    assert response.status_code in (401, 403)
    assert not inproc.storage.team_exists(TEAM)


def test_a_roster_sent_under_another_version_is_refused_and_not_stored(
    inproc: InProcess,
) -> None:
    """The path's version was compared with the roster's after the roster was stored:
    a v1 sent as v5 registered the team and was answered 400."""
    root = MemberKey.generate()
    path = f"/v1/teams/{TEAM}/rosters/5"
    body = json.dumps({"roster": b64e(_roster_v1(root)), "keyrings": []}).encode()
    headers = {**signed(root, "PUT", path, body), "sealmem-operator-token": TOKEN}
    answer = inproc.client.put(path, headers=headers, content=body)
    assert (answer.status_code, answer.json()["error"]) == (400, "bad-request")
    assert not inproc.storage.team_exists(TEAM)
    assert _register(inproc.client, root, TOKEN) == 201  # under its own version it lands


@pytest.fixture
def team(tmp_path: Path, inproc: InProcess) -> HubWorld:
    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, IN_PROCESS_URL, inproc.transport)
    w.create()
    w.join("alice", "bob")
    return w


def _ids_outside(monkeypatch: pytest.MonkeyPatch, bucket: int) -> None:
    """New memory ids in any bucket (of a small snapshot's) but ``bucket``."""
    real = writes.new_memory_id

    def new_memory_id(now: int, rand: bytes) -> str:
        found = real(now, rand)
        while bucket_of(SUITE, found, MIN_BUCKETS) == bucket:
            found = real(now, os.urandom(10))
        return found

    monkeypatch.setattr(writes, "new_memory_id", new_memory_id)


@pytest.mark.slow
def test_the_hub_verifies_what_it_stores(
    team: HubWorld, inproc: InProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a writer that does not read the hub's marks (an older sealmem): only the refusal's
    # list tells it what the hub lost
    monkeypatch.setattr(HubTransport, "damaged_chunks", lambda *a: set())
    refusals: list[MissingChunks] = []
    real_push = HubTransport.push

    def push(self: HubTransport, *args: Any) -> None:
        try:
            real_push(self, *args)
        except MissingChunks as exc:
            refusals.append(exc)
            raise

    monkeypatch.setattr(HubTransport, "push", push)
    # and publishes full manifests only (a delta names its changed chunks, checked alone)
    monkeypatch.setattr(snapshot, "FULL_EVERY", 1)
    alice = team.nodes["alice"]
    t = alice.t.transport
    # a chunk whose bytes do not hash to its id
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{alice.key.kid}/{'0' * 64}"
    bad = inproc.client.put(path, headers=signed(alice.key, "PUT", path, b"x"), content=b"x")
    assert (bad.status_code, bad.json()["error"]) == (422, "bad-chunk-id")
    # a manifest whose chunks were never uploaded
    first = alice.remember("a memory for the manifest")
    alice.sync()
    [manifest] = t.writer_manifests(PROJECT, alice.key.kid)
    seqs_before = t.newest_seqs(PROJECT)
    # the hub loses alice's chunks (a collect keeps what a manifest names: drop the rows)
    lost = [k for k, _ in inproc.storage.chunk_rows(None, 1000) if k.writer == alice.key.kid]
    assert lost
    inproc.storage.chunk_rows_remove(lost, stored_before_ms=now_ms() + 1, unreferenced=False)
    # in another bucket: the next manifest names the lost chunk again, not a rebuilt one
    _ids_outside(monkeypatch, bucket_of(SUITE, first.id, MIN_BUCKETS))
    alice.remember("another")
    summary = alice.sync()  # refused with the list of what is lost; repaired at once
    [refused] = refusals
    assert refused.ids == {k.chunk_id for k in lost}
    assert summary.warnings == []
    assert t.newest_seqs(PROJECT)[alice.key.kid] == seqs_before[alice.key.kid] + 1
    [newest] = t.writer_manifests(PROJECT, alice.key.kid)[:1]
    listed = {c.id for c in peek(newest).chunks}
    assert listed.isdisjoint(inproc.storage.lost_chunks(TEAM, PROJECT, alice.key.kid, 100))
    # a manifest signed by bob, filed in alice's slot by bob
    with pytest.raises(HubError) as info:
        team.nodes["bob"].t.transport.push(PROJECT, alice.key.kid, 9, manifest, {})
    assert info.value.code == "not-your-slot"
    # garbage instead of a manifest
    with pytest.raises(HubError) as info:
        t.push(PROJECT, alice.key.kid, 9, b"not a manifest", {})
    assert (info.value.status, info.value.code) == (422, "not-canonical")


@pytest.mark.slow
def test_keyrings_wait_for_their_roster_and_rosters_cannot_roll_back(team: HubWorld) -> None:
    admin = team.nodes["admin"]
    t = admin.t.transport
    assert isinstance(t, HubTransport)
    roster = admin.t.roster()
    nxt = roster.successor(SUITE, created_at=now_ms(), projects={**roster.projects, "new": 1})
    keyring = build_keyring(ContentKey.generate(), nxt, "new")
    t.put_keyring("new", 1, keyring.sign(admin.key))  # kept: names a roster not there yet
    assert t.keyrings("new") == []
    t.put_roster(nxt.version, nxt.sign(admin.key))
    assert len(t.keyrings("new")) == 1
    with pytest.raises(ConflictError) as info:
        t.put_roster(roster.version, roster.sign(admin.key))
    assert info.value.code == "rollback"


@pytest.mark.slow
def test_limits_answer_with_clear_errors(tmp_path: Path, fast: bool) -> None:
    config = hub_config(tmp_path / "d", max_body_bytes=4096, member_rate=0.001, member_burst=40,
                        team_quota_bytes=60_000, fast=fast)  # fmt: skip
    app = create_app(config)
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        homes = tmp_path / "homes"
        homes.mkdir()
        w = HubWorld(
            homes,
            IN_PROCESS_URL,
            lambda k: HubTransport(IN_PROCESS_URL, TEAM, k, operator_token=TOKEN, client=client),
        )
        w.create()
        admin = w.nodes["admin"].key
        path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{admin.kid}/{'a' * 64}"
        big = client.put(path, headers=signed(admin, "PUT", path, b"x" * 5000), content=b"x" * 5000)
        assert (big.status_code, big.json()["error"]) == (413, "too-large")
        codes = []
        for i in range(40):
            data = bytes([i]) * 4000
            p = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{admin.kid}/{chunk_id(SUITE, data)}"
            r = client.put(p, headers=signed(admin, "PUT", p, data), content=data)
            codes.append((r.status_code, r.json().get("error")))
            if r.status_code >= 400:
                assert r.json()["detail"]
        assert (507, "quota-exceeded") in codes
        assert codes[-1] == (429, "rate-limited")


def test_join_inbox(team: HubWorld, inproc: InProcess) -> None:
    carol = MemberKey.generate()
    path = f"/v1/teams/{TEAM}/requests/{carol.kid}"
    garbage = inproc.client.post(path, content=b"{}")
    assert garbage.status_code == 422
    wrong_kid = inproc.client.post(
        f"/v1/teams/{TEAM}/requests/{MemberKey.generate().kid}",
        content=make_join_request(carol, team=TEAM, name="carol", invite_id=ANY_INVITE, now=1),
    )
    assert (wrong_kid.status_code, wrong_kid.json()["error"]) == (422, "signer-mismatch")
    unknown = inproc.client.post(
        f"/v1/teams/no-such-team/requests/{carol.kid}",
        content=make_join_request(
            carol, team="no-such-team", name="carol", invite_id=ANY_INVITE, now=1
        ),
    )
    assert (unknown.status_code, unknown.json()["error"]) == (404, "unknown-team")
    ok = inproc.client.post(
        path, content=make_join_request(carol, team=TEAM, name="carol", invite_id=ANY_INVITE, now=1)
    )
    assert ok.status_code == 201
    # a pending joiner reads its request's state and roster v1 (the root), nothing else
    pending = HubTransport(IN_PROCESS_URL, TEAM, carol, client=inproc.client)
    assert pending.join_status(carol.kid) == "pending"
    assert len(pending.rosters(0)) == 1  # not v2, which names alice and bob
    with pytest.raises(HubError) as info:
        pending.newest_seqs(PROJECT)
    assert info.value.code == "unknown-key"
    admin = team.nodes["admin"].t.transport
    assert carol.kid in admin.requests()
    admin.remove_request(carol.kid)
    assert carol.kid not in admin.requests()


@pytest.mark.slow
def test_unknown_routes_and_the_access_log(
    team: HubWorld, inproc: InProcess, caplog: pytest.LogCaptureFixture
) -> None:
    missing = inproc.client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not-found"
    alice = team.nodes["alice"]
    caplog.set_level(logging.INFO, logger="sealmem.hub.access")
    alice.remember("access log must not show this text")
    alice.sync()
    lines = [r.getMessage() for r in caplog.records if r.name == "sealmem.hub.access"]
    assert any("PUT /v1/teams/{team}/projects/{project}/manifests/{writer}/{seq:int} 201" in line
               and f"member={alice.key.kid}" in line for line in lines)  # fmt: skip
    text = "\n".join(lines)
    assert "access log" not in text
    assert TEAM not in text
    assert "sealmem-signature" not in text.lower()


def test_open_transport_picks_folder_or_hub(tmp_path: Path) -> None:
    key = MemberKey.generate()
    hub = open_transport("https://hub.example.org", TEAM, key)
    assert isinstance(hub, HubTransport)
    assert hub.kind == "hub"
    assert hub.location == "https://hub.example.org"
    hub.close()
    folder = open_transport(str(tmp_path), TEAM, key)
    assert isinstance(folder, FolderTransport)
    with pytest.raises(InputError):
        HubTransport("ftp://hub.example.org", TEAM, key)


def test_the_hub_never_imports_the_client() -> None:
    hub_dir = Path(__file__).resolve().parents[2] / "hub"
    for source in hub_dir.glob("*.py"):
        assert "sealmem.client" not in source.read_text(encoding="utf-8"), source.name


def test_a_join_request_with_a_huge_integer_is_refused_by_name(inproc: InProcess) -> None:
    # unauthenticated garbage must get a named 422, never a 500 from a leaked ValueError
    carol = MemberKey.generate()
    path = f"/v1/teams/{TEAM}/requests/{carol.kid}"
    key = MemberKey.generate()
    _register(inproc.client, key, TOKEN)
    before = inproc.dump()
    answer = inproc.client.post(path, content=b'{"body":{"n":' + b"7" * 5000 + b"}}")
    assert (answer.status_code, answer.json()["error"]) == (422, "not-canonical")
    assert inproc.dump() == before


@pytest.mark.slow
@pytest.mark.parametrize("grace", ["Infinity", "-Infinity", "NaN", '"soon"'])
def test_collect_refuses_a_grace_that_is_not_a_number(
    team: HubWorld, inproc: InProcess, grace: str
) -> None:
    alice = team.nodes["alice"].key
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/collect/{alice.kid}"
    body = b'{"keep": [], "grace_ms": ' + grace.encode() + b"}"
    before = inproc.dump()
    answer = inproc.client.post(path, headers=signed(alice, "POST", path, body), content=body)
    assert (answer.status_code, answer.json()["error"]) == (400, "bad-request")
    assert inproc.dump() == before


def test_the_hub_refuses_join_requests_that_name_no_invite(
    team: HubWorld, inproc: InProcess
) -> None:
    """The hub runs the protocol's request check: an old v1 request or one without an
    invite id is refused by name, and nothing is stored."""
    carol = MemberKey.generate()
    path = f"/v1/teams/{TEAM}/requests/{carol.kid}"
    body = {
        "format": "sealmem/join/v1", "team": TEAM, "kid": carol.kid, "name": "carol",
        "sign_public": b64e(carol.sign_public), "box_public": b64e(carol.box_public),
        "created_at": 1,
    }  # fmt: skip
    before = inproc.dump()
    old = inproc.client.post(path, content=seal(body, "join", carol))
    assert (old.status_code, old.json()["error"]) == (422, "unknown-format")
    no_id = inproc.client.post(path, content=seal({**body, "format": JOIN_FORMAT}, "join", carol))
    assert (no_id.status_code, no_id.json()["error"]) == (422, "malformed")
    assert "invite_id" in no_id.json()["detail"]
    assert inproc.dump() == before


@pytest.mark.slow
def test_a_manifest_whose_format_is_not_a_string_is_refused_by_name(
    team: HubWorld, inproc: InProcess
) -> None:
    """A list or an object as a manifest's format is ``unknown-format`` (422), not a 500:
    the format picks the key set the body is read with."""
    alice = team.nodes["alice"]
    alice.remember("a memory for the manifest")
    alice.sync()
    [manifest] = alice.t.transport.writer_manifests(PROJECT, alice.key.kid)
    body = canonical.decode(manifest)["body"]
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/manifests/{alice.key.kid}/{body['seq'] + 1}"
    before = inproc.dump()
    for fmt in ([], {}, ["sealmem/manifest/v1"]):
        data = seal({**body, "seq": body["seq"] + 1, "format": fmt}, "manifest", alice.key)
        answer = inproc.client.put(path, headers=signed(alice.key, "PUT", path, data), content=data)
        assert (answer.status_code, answer.json()["error"]) == (422, "unknown-format"), fmt
    assert inproc.dump() == before
