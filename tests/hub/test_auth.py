"""The auth matrix, in process through httpx.ASGITransport: every bad request is refused
with 401/403 and a named reason, and nothing stored changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sealmem.client.team.admin import revoke
from sealmem.crypto import SUITE, MemberKey
from sealmem.protocol.snapshot import chunk_id

from .conftest import PROJECT, TEAM, HubWorld, InProcess, now_ms, signed

pytestmark = pytest.mark.anyio

CHUNK = b"\x01" * 200  # opaque bytes: the hub checks only that the id is their hash
CID = chunk_id(SUITE, CHUNK)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def matrix(tmp_path: Path, inproc: InProcess) -> Iterator[tuple[InProcess, HubWorld, HubWorld]]:
    """acme: admin, alice (all projects), bob (only 'shared'), eve (revoked);
    other-team: mallory (its admin)."""
    homes = tmp_path / "homes"
    homes.mkdir()
    acme = HubWorld(homes, "http://hub.test", inproc.transport)
    acme.create()
    acme.join("alice", "eve")
    acme.join("bob", projects=["shared"])
    revoke(acme.nodes["admin"].t, "eve", keep_data=False, now=now_ms())
    others = tmp_path / "others"
    others.mkdir()
    other = HubWorld(others, "http://hub.test", lambda k: inproc.transport(k, "other-team"),
                     team="other-team")  # fmt: skip
    other.create(name="mallory")
    try:
        yield inproc, acme, other
    finally:
        acme.close()
        other.close()


def _chunk_path(writer: str, project: str = PROJECT) -> str:
    return f"/v1/teams/{TEAM}/projects/{project}/chunks/{writer}/{CID}"


async def _refused(
    hub: InProcess, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> tuple[int, str]:
    before = hub.dump()
    async with hub.asgi() as client:
        response = await client.request(method, path, headers=headers, content=body)
    doc = response.json()
    assert set(doc) == {"error", "detail"}
    assert len(doc["detail"]) > 20
    assert hub.dump() == before, "a refused request changed what the hub stores"
    return response.status_code, doc["error"]


async def test_unsigned(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, acme, _ = matrix
    alice = acme.nodes["alice"].key
    assert await _refused(hub, "PUT", _chunk_path(alice.kid), {}, CHUNK) == (401, "unsigned")
    partial = {"sealmem-kid": alice.kid}
    status, code = await _refused(hub, "PUT", _chunk_path(alice.kid), partial, CHUNK)
    assert (status, code) == (401, "bad-auth-header")


@pytest.mark.slow
async def test_wrong_key(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, acme, _ = matrix
    alice = acme.nodes["alice"].key
    forged = signed(MemberKey.generate(), "PUT", _chunk_path(alice.kid), CHUNK)
    forged["sealmem-kid"] = alice.kid  # a member's kid: answered as any unknown key
    assert await _refused(hub, "PUT", _chunk_path(alice.kid), forged, CHUNK) == (
        401,
        "unknown-key",
    )


@pytest.mark.slow
async def test_body_altered_in_transit(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, acme, _ = matrix
    alice = acme.nodes["alice"].key
    headers = signed(alice, "PUT", _chunk_path(alice.kid), CHUNK)
    other = b"\x02" * 200
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{alice.kid}/{chunk_id(SUITE, other)}"
    assert await _refused(hub, "PUT", path, headers, other) == (401, "unknown-key")


async def test_unknown_member(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, _, _ = matrix
    stranger = MemberKey.generate()
    path = _chunk_path(stranger.kid)
    headers = signed(stranger, "PUT", path, CHUNK)
    assert await _refused(hub, "PUT", path, headers, CHUNK) == (401, "unknown-key")
    rosters = f"/v1/teams/{TEAM}/rosters?after=0"
    status, code = await _refused(hub, "GET", rosters, signed(stranger, "GET", rosters))
    assert (status, code) == (401, "unknown-key")


async def test_revoked_member(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, acme, _ = matrix
    eve = acme.nodes["eve"].key
    path = _chunk_path(eve.kid)
    assert await _refused(hub, "PUT", path, signed(eve, "PUT", path, CHUNK), CHUNK) == (
        403,
        "revoked",
    )
    seqs = f"/v1/teams/{TEAM}/projects/{PROJECT}/seqs"
    assert await _refused(hub, "GET", seqs, signed(eve, "GET", seqs)) == (403, "revoked")


async def test_replayed_request(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, acme, _ = matrix
    alice = acme.nodes["alice"].key
    path = _chunk_path(alice.kid)
    headers = signed(alice, "PUT", path, CHUNK)
    async with hub.asgi() as client:
        first = await client.put(path, headers=headers, content=CHUNK)
    assert first.status_code == 201
    assert await _refused(hub, "PUT", path, headers, CHUNK) == (401, "replayed")


async def test_stale_timestamp(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, acme, _ = matrix
    alice = acme.nodes["alice"].key
    path = _chunk_path(alice.kid)
    for skew in (-10 * 60 * 1000, 10 * 60 * 1000):
        headers = signed(alice, "PUT", path, CHUNK, now=now_ms() + skew)
        assert await _refused(hub, "PUT", path, headers, CHUNK) == (401, "stale-time")


async def test_wrong_team(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, _, other = matrix
    mallory = other.nodes["mallory"].key
    path = _chunk_path(mallory.kid)
    headers = signed(mallory, "PUT", path, CHUNK)
    assert await _refused(hub, "PUT", path, headers, CHUNK) == (403, "wrong-team")


async def test_no_grant(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, acme, _ = matrix
    bob = acme.nodes["bob"].key
    path = _chunk_path(bob.kid)
    assert await _refused(hub, "PUT", path, signed(bob, "PUT", path, CHUNK), CHUNK) == (
        403,
        "no-grant",
    )
    for read in (
        f"/v1/teams/{TEAM}/projects/{PROJECT}/seqs",
        f"/v1/teams/{TEAM}/projects/{PROJECT}/manifests",
        f"/v1/teams/{TEAM}/keyrings/{PROJECT}",
        _chunk_path(acme.nodes["alice"].key.kid),
    ):
        assert await _refused(hub, "GET", read, signed(bob, "GET", read)) == (403, "no-grant")


async def test_other_slot_and_admin_only(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, acme, _ = matrix
    alice, bob = acme.nodes["alice"].key, acme.nodes["bob"].key
    path = _chunk_path(bob.kid, "shared")
    headers = signed(alice, "PUT", path, CHUNK)
    assert await _refused(hub, "PUT", path, headers, CHUNK) == (403, "not-your-slot")
    requests = f"/v1/teams/{TEAM}/requests"
    assert await _refused(hub, "GET", requests, signed(alice, "GET", requests)) == (
        403,
        "not-admin",
    )
    roster = f"/v1/teams/{TEAM}/rosters/9"
    body = b'{"roster": "", "keyrings": []}'
    status, code = await _refused(hub, "PUT", roster, signed(alice, "PUT", roster, body), body)
    assert (status, code) == (403, "not-admin")


async def test_a_granted_member_gets_through(matrix: tuple[InProcess, HubWorld, HubWorld]) -> None:
    hub, acme, _ = matrix
    alice = acme.nodes["alice"].key
    path = _chunk_path(alice.kid)
    async with hub.asgi() as client:
        put = await client.put(path, headers=signed(alice, "PUT", path, CHUNK), content=CHUNK)
        got = await client.get(path, headers=signed(alice, "GET", path))
    assert put.status_code == 201
    assert got.content == CHUNK


async def test_a_long_poll_cannot_escape_its_cap(
    matrix: tuple[InProcess, HubWorld, HubWorld],
) -> None:
    # wait=nan passed min() and max() unchanged and made the hub wait with no
    # deadline: one member could hold any number of requests open for ever
    hub, acme, _ = matrix
    alice = acme.nodes["alice"].key
    cursor = hub.storage.cursor(TEAM)
    for wait in ("nan", "inf", "soon"):
        path = f"/v1/teams/{TEAM}/changes?since={cursor}&wait={wait}"
        with anyio.fail_after(10):
            status, code = await _refused(hub, "GET", path, signed(alice, "GET", path))
        assert (status, code) == (400, "bad-request")


def test_a_nonce_is_remembered_for_as_long_as_its_request_is_in_the_window(
    tmp_path: Path,
) -> None:
    """A request dated a whole window ahead of the hub clock is accepted, and is still
    inside the window (dated a whole window behind) two windows later: its nonce must
    still be remembered then, at the very last millisecond too."""
    from sealmem.hub.auth import ReplayGuard
    from sealmem.hub.errors import Refusal
    from sealmem.hub.storage.sqlite import SQLiteStorage

    window = 300_000
    storage = SQLiteStorage(tmp_path / "hub")
    try:
        guard = ReplayGuard(window, storage)
        dated = 1_700_000_000_000
        first = dated - window  # the hub clock when the request first arrives
        guard.check_time(dated, first)
        guard.remember("a" * 26, "nonce-1", first)
        for later in (first + window, dated + window - 1, dated + window):
            guard.check_time(dated, later)  # still in the window
            with pytest.raises(Refusal) as caught:
                guard.remember("a" * 26, "nonce-1", later)
            assert caught.value.code == "replayed"
        with pytest.raises(Refusal):
            guard.check_time(dated, dated + window + 1)  # out of the window from here on
    finally:
        storage.close()
