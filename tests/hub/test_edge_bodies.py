"""The hub's edge over a real uvicorn on 127.0.0.1, spoken to through raw sockets.

A request body is read only for a key the hub holds, within its route's limit,
at a minimum rate, and only so many at once.  Before, the hub buffered up to
12 MiB of any request (signed or not) before looking at who sent it, and waited
for a stalled body for ever.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import MemberKey
from sealmem.hub.http.server import BackgroundHub, free_port
from sealmem.protocol.verify import MAX_MANIFEST_BYTES
from tests.support.rawhttp import answer

from .conftest import METRICS_AUTH, PROJECT, TEAM, TOKEN, HubWorld, hub_config, signed

#: the answer to a refused head must come at once, not after a body nobody sends
PROMPT_S = 5.0


@pytest.fixture
def edge(tmp_path: Path) -> Iterator[tuple[BackgroundHub, HubWorld]]:
    """A real hub with an impatient edge (the defaults are 15 s idle, 16 KiB/s after 5 s),
    and a team on it: admin, alice."""
    config = hub_config(
        tmp_path / "hub-data", port=free_port(), body_idle_s=1.0, body_grace_s=0.5,
        body_min_rate=2000, max_body_reads=2,
    )  # fmt: skip
    with BackgroundHub(config) as hub:
        homes = tmp_path / "homes"
        homes.mkdir()
        w = HubWorld(
            homes, hub.url, lambda key: HubTransport(hub.url, TEAM, key, operator_token=TOKEN)
        )
        w.create()
        w.join("alice")
        try:
            yield hub, w
        finally:
            w.close()


def _connect(hub: BackgroundHub) -> socket.socket:
    sock = socket.create_connection((hub.config.host, hub.config.port), timeout=PROMPT_S)
    return sock


def _connect_from(hub: BackgroundHub, source: str) -> socket.socket:
    """A connection from another loopback address (all of 127.0.0.0/8 on Linux)."""
    sock = socket.socket()
    sock.settimeout(PROMPT_S)
    sock.bind((source, 0))
    sock.connect((hub.config.host, hub.config.port))
    return sock


def _head(
    hub: BackgroundHub, method: str, path: str, headers: dict[str, str], length: int | None
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {hub.config.host}:{hub.config.port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append(
        f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    )
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _wait_reading(hub: BackgroundHub, gauge: str, n: int) -> None:
    """Until the hub's metrics say ``n`` bodies are being read in ``gauge``'s pool."""
    deadline = time.monotonic() + PROMPT_S
    while time.monotonic() < deadline:
        text = httpx.get(hub.url + "/metrics", headers=METRICS_AUTH).text
        if f"{gauge} {float(n)}" in text:
            return
        time.sleep(0.02)
    raise AssertionError(f"the hub never read {n} bodies at once ({gauge})")


def _manifest_path(kid: str, seq: int = 99) -> str:
    return f"/v1/teams/{TEAM}/projects/{PROJECT}/manifests/{kid}/{seq}"


def _chunk_path(kid: str) -> str:
    return f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{kid}/{'a' * 64}"


TWELVE_MIB = 12 * 1024 * 1024


@pytest.mark.slow
def test_an_unknown_key_is_refused_before_its_body_is_sent(
    edge: tuple[BackgroundHub, HubWorld],
) -> None:
    hub, _ = edge
    stranger = MemberKey.generate()
    path = _chunk_path(stranger.kid)
    for headers, code in (
        (signed(stranger, "PUT", path, b"x"), "unknown-key"),
        ({}, "unsigned"),
    ):
        with _connect(hub) as sock:
            sock.sendall(_head(hub, "PUT", path, headers, TWELVE_MIB))
            started = time.monotonic()
            status, answer_headers, doc = answer(sock)  # no body byte was sent
            assert (status, doc["error"]) == (401, code)
            assert time.monotonic() - started < PROMPT_S
            assert answer_headers.get("connection") == "close"  # the body is not read after


@pytest.mark.slow
def test_a_declared_length_over_the_route_limit_is_refused_at_once(
    edge: tuple[BackgroundHub, HubWorld],
) -> None:
    """A member's manifest is at most 1 MiB (a chunk may be 8): 413 before any body byte."""
    hub, w = edge
    alice = w.nodes["alice"].key
    path = _manifest_path(alice.kid)
    with _connect(hub) as sock:
        sock.sendall(_head(hub, "PUT", path, signed(alice, "PUT", path), MAX_MANIFEST_BYTES + 1))
        status, _, doc = answer(sock)
    assert (status, doc["error"]) == (413, "too-large")
    assert str(MAX_MANIFEST_BYTES) in str(doc["detail"])


@pytest.mark.slow
def test_a_chunked_body_is_cut_off_at_the_route_limit(
    edge: tuple[BackgroundHub, HubWorld],
) -> None:
    hub, w = edge
    alice = w.nodes["alice"].key
    path = _manifest_path(alice.kid)
    piece = b"m" * 65536
    with _connect(hub) as sock:
        sock.sendall(_head(hub, "PUT", path, signed(alice, "PUT", path), None))
        sent = 0
        while sent <= MAX_MANIFEST_BYTES:
            sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            sent += len(piece)
        status, _, doc = answer(sock)  # the hub stopped at 1 MiB; we send no end
    assert (status, doc["error"]) == (413, "too-large")


@pytest.mark.slow
def test_a_trickling_body_is_cut_off(edge: tuple[BackgroundHub, HubWorld]) -> None:
    """10 bytes every 0.1 s is 100 bytes/s; this hub asks 2000 after 0.5 s: 408."""
    hub, w = edge
    alice = w.nodes["alice"].key
    path = _manifest_path(alice.kid)
    with _connect(hub) as sock:
        sock.sendall(_head(hub, "PUT", path, signed(alice, "PUT", path), 100_000))
        started = time.monotonic()
        while time.monotonic() - started < PROMPT_S:
            sock.sendall(b"t" * 10)
            if select.select([sock], [], [], 0.1)[0]:  # the hub answered while we send
                break
        status, _, doc = answer(sock)
    assert (status, doc["error"]) == (408, "slow-body")
    assert time.monotonic() - started < PROMPT_S


@pytest.mark.slow
def test_stalled_bodies_fill_the_readers_then_free_them(
    edge: tuple[BackgroundHub, HubWorld],
) -> None:
    """Two stalled bodies take this hub's two readers: a third member gets 503 with
    Retry-After at once; once the stalls are cut off (408), the readers are free again."""
    hub, w = edge
    alice, admin = w.nodes["alice"].key, w.nodes["admin"].key
    stalled = []
    for key in (alice, admin):
        path = _manifest_path(key.kid)
        sock = _connect(hub)
        sock.sendall(_head(hub, "PUT", path, signed(key, "PUT", path), 1000) + b"half")
        stalled.append(sock)
    _wait_reading(hub, "sealmem_hub_body_reads", 2)
    path = _manifest_path(alice.kid, 100)
    with _connect(hub) as sock:
        sock.sendall(_head(hub, "PUT", path, signed(alice, "PUT", path), 1000))
        status, headers, doc = answer(sock)
    assert (status, doc["error"]) == (503, "hub-busy")
    assert headers["retry-after"] == "1"
    for sock in stalled:
        with sock:
            status, _, doc = answer(sock)
            assert (status, doc["error"]) == (408, "slow-body")
    w.nodes["alice"].remember("the readers are free again")
    assert w.nodes["alice"].sync().pushed_versions == 1  # chunk and manifest bodies read


def test_connections_over_the_limit_get_503(tmp_path: Path) -> None:
    """uvicorn's own limit: with three connections open (idle), a fourth is told 503 at
    once instead of costing the hub another connection's buffers."""
    config = hub_config(tmp_path / "hub-data", port=free_port(), max_connections=3)
    with BackgroundHub(config) as hub:
        idle = [_connect(hub) for _ in range(3)]
        try:
            assert _healthz_until(hub, 503) == 503
        finally:
            for sock in idle:
                sock.close()
        assert _healthz_until(hub, 200) == 200


def _healthz_until(hub: BackgroundHub, wanted: int) -> int:
    """``GET /healthz`` on a new connection until it answers ``wanted`` (the server
    accepts and forgets connections on its own time), or :data:`PROMPT_S` passed."""
    deadline = time.monotonic() + PROMPT_S
    while True:
        with _connect(hub) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n")
            status = int(sock.recv(65536).split(b" ", 2)[1])
        if status == wanted or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


@pytest.mark.slow
def test_stalled_join_posts_do_not_take_the_members_readers(tmp_path: Path) -> None:
    """Strangers may post join requests unsigned; their stalled bodies fill a pool of
    their own (503 for the next stranger), and a member's push is still read."""
    config = hub_config(
        tmp_path / "hub-data", port=free_port(), body_idle_s=30.0, body_grace_s=30.0,
        max_body_reads=2, max_join_reads=2,
    )  # fmt: skip
    with BackgroundHub(config) as hub:
        homes = tmp_path / "homes"
        homes.mkdir()
        w = HubWorld(
            homes, hub.url, lambda key: HubTransport(hub.url, TEAM, key, operator_token=TOKEN)
        )
        w.create()
        w.join("alice")
        try:
            stalled = []
            for source in ("127.0.0.1", "127.0.0.2"):  # one address gets a share only
                path = f"/v1/teams/{TEAM}/requests/{MemberKey.generate().kid}"
                sock = _connect_from(hub, source)
                sock.sendall(_head(hub, "POST", path, {}, 4000) + b"{")
                stalled.append(sock)
            _wait_reading(hub, "sealmem_hub_join_reads", 2)
            path = f"/v1/teams/{TEAM}/requests/{MemberKey.generate().kid}"
            with _connect_from(hub, "127.0.0.3") as sock:
                sock.sendall(_head(hub, "POST", path, {}, 4000))
                status, _, doc = answer(sock)
            assert (status, doc["error"]) == (503, "hub-busy")
            w.nodes["alice"].remember("members are read while strangers stall")
            assert w.nodes["alice"].sync().pushed_versions == 1
        finally:
            for sock in stalled:
                sock.close()
            w.close()


@pytest.mark.slow
def test_one_key_cannot_take_every_reader(tmp_path: Path) -> None:
    """One member's key (or a stolen one) stalling bodies gets a share of the readers
    (here 1 of 4); the other members' bodies are still read."""
    config = hub_config(
        tmp_path / "hub-data", port=free_port(), body_idle_s=30.0, body_grace_s=30.0,
        max_body_reads=4,
    )  # fmt: skip
    with BackgroundHub(config) as hub:
        homes = tmp_path / "homes"
        homes.mkdir()
        w = HubWorld(
            homes, hub.url, lambda key: HubTransport(hub.url, TEAM, key, operator_token=TOKEN)
        )
        w.create()
        w.join("alice")
        alice = w.nodes["alice"].key
        stalled = []
        try:
            for seq in range(100, 104):  # alice's own signature: proven before the body
                path = _manifest_path(alice.kid, seq)
                sock = _connect(hub)
                sock.sendall(_head(hub, "PUT", path, signed(alice, "PUT", path), 1000) + b"{")
                stalled.append(sock)
            _wait_reading(hub, "sealmem_hub_body_reads", 1)
            status, _, doc = answer(stalled[-1])
            assert (status, doc["error"]) == (503, "hub-busy")
            w.nodes["admin"].remember("read while alice's kid is stalled")
            assert w.nodes["admin"].sync().pushed_versions == 1
        finally:
            for sock in stalled:
                sock.close()
            w.close()
