"""The hub proves the key before it reads the body: over a real uvicorn on 127.0.0.1,
on both paths, through raw sockets with trickled bodies.

Before, the gate only checked that the kid in the headers was a member's and read
the body to check the signature over its digest: anyone who knew the root admin's
kid (it is in every invite and in roster v1) held that kid's quarter of the body
readers with junk signatures, four known kids held all of them, and ``admin
revoke`` was ``hub-busy`` for as long as the bodies trickled in.  The signed digest
travels in ``Sealmem-Digest`` now: a junk signature is refused before its first
body byte, and members' own uploads leave the readers kept for admins' rosters and
keyrings.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.client.team import admin
from sealmem.crypto import SUITE, MemberKey
from sealmem.crypto.request import body_digest
from sealmem.hub.http.server import BackgroundHub, free_port
from sealmem.protocol import hubapi
from sealmem.protocol.admin import genesis
from sealmem.protocol.encoding import b64e
from sealmem.protocol.manifest import MAX_CHUNK_BYTES
from sealmem.protocol.roster import Member
from tests.support.rawhttp import answer

from .conftest import (
    BOTH_PATHS,
    METRICS_AUTH,
    PROJECT,
    TEAM,
    TOKEN,
    HubWorld,
    hub_config,
    now_ms,
    signed,
)

pytestmark = [pytest.mark.slow, BOTH_PATHS]

#: an answer refused from the headers comes at once, not after a body nobody sends
PROMPT_S = 5.0
#: the attacker's pace: above the hub's minimum rate, so the edge alone never cuts it
TRICKLE_BYTES_PER_S = 20 * 1024
#: bodies per kid: the quarter of the default 32 readers one kid could hold before
PER_KID = 8


@pytest.fixture
def team_hub(tmp_path: Path, fast: bool) -> Iterator[tuple[BackgroundHub, HubWorld]]:
    """A hub with the default 32 readers and a team of five on it.  The minimum rate is
    lowered (4 KiB/s after 10 s) so that a trickle slowed by a busy test machine is
    still read; clients retry a busy hub for 3 s only (the default is 30)."""
    config = hub_config(
        tmp_path / "hub-data", port=free_port(), fast=fast, body_min_rate=4096,
        body_grace_s=10.0, body_idle_s=10.0,
    )  # fmt: skip
    with BackgroundHub(config) as hub:
        homes = tmp_path / "homes"
        homes.mkdir()
        w = HubWorld(
            homes,
            hub.url,
            lambda key: HubTransport(hub.url, TEAM, key, operator_token=TOKEN, retry_budget_s=3.0),
        )
        w.create()
        w.join("alice", "bob", "carol", "dave")
        try:
            yield hub, w
        finally:
            w.close()


def _chunk_path(kid: str, n: int) -> str:
    return f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{kid}/{n:064x}"


def _head(
    hub: BackgroundHub, method: str, path: str, headers: dict[str, str], length: int
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {hub.config.host}:{hub.config.port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _body_reads(hub: BackgroundHub) -> float:
    text = httpx.get(hub.url + "/metrics", headers=METRICS_AUTH).text
    line = next(x for x in text.splitlines() if x.startswith("sealmem_hub_body_reads "))
    return float(line.split()[1])


def _refused_before_the_body(hub: BackgroundHub, path: str, headers: dict[str, str]) -> str:
    """The code of a PUT declaring 1 MiB (within the limit) and sending none of it: a
    hub that waited for the body would not answer within :data:`PROMPT_S`."""
    with socket.create_connection((hub.config.host, hub.config.port), PROMPT_S) as sock:
        sock.sendall(_head(hub, "PUT", path, headers, 1024 * 1024))
        status, answer_headers, doc = answer(sock)
    assert answer_headers.get("connection") == "close"
    return f"{status} {doc['error']}"


@dataclass
class Trickle:
    """Chunk PUTs declaring 8 MiB bodies, fed ``TRICKLE_BYTES_PER_S`` each from a thread
    until stopped; a socket the hub answered is left alone (its answer kept)."""

    hub: BackgroundHub
    socks: list[socket.socket] = field(default_factory=list)
    answered: dict[int, tuple[int, str]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def open(self, path: str, headers: dict[str, str]) -> None:
        sock = socket.create_connection((self.hub.config.host, self.hub.config.port), PROMPT_S)
        sock.sendall(_head(self.hub, "PUT", path, headers, MAX_CHUNK_BYTES))
        self.socks.append(sock)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._feed, daemon=True)
        self._thread.start()

    def _feed(self) -> None:
        tick = 0.1
        piece = b"j" * int(TRICKLE_BYTES_PER_S * tick)
        while not self._stop.wait(tick):
            for i, sock in enumerate(self.socks):
                if i in self.answered:
                    continue
                if select.select([sock], [], [], 0)[0]:
                    self._answer(i, sock)
                    continue
                try:
                    sock.sendall(piece)
                except OSError:
                    self._answer(i, sock)

    def _answer(self, i: int, sock: socket.socket) -> None:
        try:
            status, _, doc = answer(sock)
            self.answered[i] = (status, str(doc.get("error")))
        except (OSError, ConnectionError, ValueError):
            self.answered[i] = (0, "closed without an answer")

    def settle(self) -> float:
        """Before :meth:`start`: wait until each body is either answered (the answer
        read before any body byte is sent, so a refused socket is never reset) or
        being read; the bodies being read."""
        deadline = time.monotonic() + PROMPT_S
        while True:
            for i, sock in enumerate(self.socks):
                if i not in self.answered and select.select([sock], [], [], 0)[0]:
                    self._answer(i, sock)
            reading = _body_reads(self.hub)
            if reading + len(self.answered) >= len(self.socks) or time.monotonic() > deadline:
                return reading
            time.sleep(0.05)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(PROMPT_S)
        for sock in self.socks:
            sock.close()


def test_junk_signatures_naming_known_kids_hold_no_reader(
    team_hub: tuple[BackgroundHub, HubWorld],
) -> None:
    """The attack: 8 chunk PUTs per known kid with a junk signature, four kids (the root
    admin's among them), bodies trickled at 20 KiB/s.  Each is refused from its
    headers; meanwhile ``admin revoke`` and an honest member's push succeed."""
    hub, w = team_hub
    forger = MemberKey.generate()
    trickle = Trickle(hub)
    named = [w.nodes[n].key.kid for n in ("admin", "alice", "bob", "carol")]
    try:
        for kid in named:
            for n in range(PER_KID):
                path = _chunk_path(kid, n)
                headers = signed(forger, "PUT", path, b"junk")  # a key nobody holds
                headers["sealmem-kid"] = kid
                trickle.open(path, headers)
        reading = trickle.settle()
        trickle.start()
        roster = admin.revoke(w.nodes["admin"].t, "carol", now=now_ms())
        assert roster.revocation(w.nodes["carol"].key.kid) is not None
        w.nodes["bob"].remember("pushed while strangers trickle junk under our kids")
        assert w.nodes["bob"].sync().pushed_versions == 1
    finally:
        trickle.close()
    assert reading == 0
    assert set(trickle.answered.values()) == {(401, hubapi.UNKNOWN_KEY)}
    assert len(trickle.answered) == len(named) * PER_KID


def test_members_uploads_leave_the_readers_kept_for_admins(
    team_hub: tuple[BackgroundHub, HubWorld],
) -> None:
    """Four members (validly signed) trickle 8 uploads each: together they get 28 of
    the 32 readers, the last four are kept, and ``admin revoke`` is read in them."""
    hub, w = team_hub
    trickle = Trickle(hub)
    try:
        for name in ("alice", "bob", "carol", "dave"):
            key = w.nodes[name].key
            for n in range(PER_KID):
                path = _chunk_path(key.kid, n)
                trickle.open(path, signed(key, "PUT", path, b"a chunk never finished"))
        reading = trickle.settle()
        trickle.start()
        roster = admin.revoke(w.nodes["admin"].t, "dave", now=now_ms())
        assert roster.revocation(w.nodes["dave"].key.kid) is not None
        assert reading == 28
        assert set(trickle.answered.values()) == {(503, hubapi.BUSY)}
        chunk = _chunk_path(w.nodes["admin"].key.kid, 1)  # an admin's chunk: not a roster
        busy = httpx.put(
            hub.url + chunk, headers=signed(w.nodes["admin"].key, "PUT", chunk, b"x"), content=b"x"
        )
        assert (busy.status_code, busy.json()["error"]) == (503, hubapi.BUSY)
        assert "kept for admins" in busy.json()["detail"]
    finally:
        trickle.close()


def test_a_body_that_does_not_hash_to_its_signed_digest_is_refused(
    team_hub: tuple[BackgroundHub, HubWorld],
) -> None:
    hub, w = team_hub
    alice = w.nodes["alice"].key
    meant, sent = b"the chunk alice signed", b"the chunk that arrived"
    path = _chunk_path(alice.kid, 7)
    headers = signed(alice, "PUT", path, meant)
    refused = httpx.put(hub.url + path, headers=headers, content=sent)
    assert refused.status_code == 400
    assert refused.json()["error"] == hubapi.DIGEST_MISMATCH
    # the digest header made to match the body: the signature no longer covers it
    again = signed(alice, "PUT", path, meant)
    again[hubapi.HEADER_DIGEST] = body_digest(sent)
    forged = httpx.put(hub.url + path, headers=again, content=sent)
    assert (forged.status_code, forged.json()["error"]) == (401, hubapi.UNKNOWN_KEY)
    storage = w.nodes["alice"].t.transport
    assert storage.chunk(PROJECT, alice.kid, f"{7:064x}") is None


def test_a_request_without_the_digest_header_is_refused_with_its_fix(
    team_hub: tuple[BackgroundHub, HubWorld],
) -> None:
    """Before its body (declared and never sent), and on a GET."""
    hub, w = team_hub
    alice = w.nodes["alice"].key
    path = _chunk_path(alice.kid, 8)
    headers = signed(alice, "PUT", path, b"x")
    del headers[hubapi.HEADER_DIGEST]
    assert _refused_before_the_body(hub, path, headers) == f"401 {hubapi.DIGEST_MISSING}"
    target = f"/v1/teams/{TEAM}/rosters"
    headers = signed(alice, "GET", target)
    del headers[hubapi.HEADER_DIGEST]
    got = httpx.get(hub.url + target, headers=headers)
    assert (got.status_code, got.json()["error"]) == (401, hubapi.DIGEST_MISSING)
    assert "upgrade sealmem" in got.json()["detail"]


def test_a_revoked_member_and_another_team_are_refused_before_the_body(
    team_hub: tuple[BackgroundHub, HubWorld], tmp_path: Path
) -> None:
    """Both need the signature, which the headers now carry everything for."""
    hub, w = team_hub
    dave = w.nodes["dave"].key
    admin.revoke(w.nodes["admin"].t, "dave", now=now_ms())
    path = _chunk_path(dave.kid, 9)
    assert _refused_before_the_body(hub, path, signed(dave, "PUT", path)) == "403 revoked"
    homes = tmp_path / "other-homes"
    homes.mkdir()
    other = HubWorld(homes, hub.url, lambda key: HubTransport(hub.url, "other-team", key,
                     operator_token=TOKEN), team="other-team")  # fmt: skip
    try:
        outsider = other.create().key
    finally:
        other.close()
    path = _chunk_path(outsider.kid, 9)
    assert _refused_before_the_body(hub, path, signed(outsider, "PUT", path)) == "403 wrong-team"


def test_a_new_team_whose_roster_does_not_match_its_digest_is_not_registered(
    team_hub: tuple[BackgroundHub, HubWorld],
) -> None:
    """Roster v1 carries its own key, so its signature is checked after the body: the
    body must still hash to the signed digest."""
    hub, _ = team_hub
    root = MemberKey.generate()
    me = Member(root.kid, "root", root.sign_public, root.box_public, "admin")
    roster = genesis(SUITE, "new-team", me, created_at=now_ms())
    body = json.dumps({"roster": b64e(roster.sign(root)), "keyrings": []}).encode()
    path = "/v1/teams/new-team/rosters/1"
    headers = {**signed(root, "PUT", path, body), hubapi.HEADER_OPERATOR_TOKEN: TOKEN}
    refused = httpx.put(hub.url + path, headers=headers, content=body + b" ")
    assert (refused.status_code, refused.json()["error"]) == (400, hubapi.DIGEST_MISMATCH)
    target = "/v1/teams/new-team/rosters"
    asked = httpx.get(hub.url + target, headers=signed(root, "GET", target))
    assert (asked.status_code, asked.json()["error"]) == (404, hubapi.UNKNOWN_TEAM)
