"""Per-member and per-address shares of the hub's waiting resources, and who reads
/metrics: over a real uvicorn on 127.0.0.1, through raw sockets.

Before, one member could hold any number of long polls at once, one address could
stall every join-request reader, and /metrics (team count, stored bytes, request
rates) answered anyone who could reach the hub.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import MemberKey
from sealmem.hub.config import HubConfig
from sealmem.hub.server import BackgroundHub, free_port
from sealmem.protocol.errors import InputError
from tests.support.rawhttp import answer

from .conftest import (
    METRICS_AUTH,
    METRICS_TOKEN,
    PROJECT,
    TEAM,
    TOKEN,
    HubWorld,
    hub_config,
    signed,
    start_hub_process,
)

PROMPT_S = 5.0


@pytest.fixture
def team_hub(tmp_path: Path) -> Iterator[tuple[BackgroundHub, HubWorld]]:
    config = hub_config(
        tmp_path / "hub-data", port=free_port(), body_idle_s=30.0, body_grace_s=30.0,
        long_poll_max_s=20.0,
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


def _connect(hub: BackgroundHub, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket()
    sock.settimeout(PROMPT_S)
    sock.bind((source, 0))  # all of 127.0.0.0/8 is loopback on Linux: other addresses
    sock.connect((hub.config.host, hub.config.port))
    return sock


def _request(hub: BackgroundHub, method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {hub.config.host}:{hub.config.port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _poll(hub: BackgroundHub, key: MemberKey, wait: int) -> socket.socket:
    target = f"/v1/teams/{TEAM}/changes?since=999999&wait={wait}"
    sock = _connect(hub)
    sock.sendall(_request(hub, "GET", target, signed(key, "GET", target)))
    return sock


@pytest.mark.slow
def test_one_member_holds_at_most_four_long_polls(
    team_hub: tuple[BackgroundHub, HubWorld],
) -> None:
    hub, w = team_hub
    alice, admin = w.nodes["alice"].key, w.nodes["admin"].key
    polls = [_poll(hub, alice, 20) for _ in range(5)]
    try:
        ready, _, _ = select.select(polls, [], [], PROMPT_S)
        assert len(ready) == 1, "one of five long polls must be refused at once"
        status, headers, doc = answer(ready[0])
        assert (status, doc["error"]) == (429, "rate-limited")
        assert int(headers["retry-after"]) >= 1
        assert "4" in str(doc["detail"])
        # the other four still wait; a poll that does not wait, and another member, pass
        assert select.select([p for p in polls if p is not ready[0]], [], [], 0.5)[0] == []
        with _poll(hub, alice, 0) as quick:
            assert answer(quick)[0] == 200
        with _poll(hub, admin, 1) as other:
            assert answer(other)[0] == 200
    finally:
        for sock in polls:
            sock.close()


def _join_post(hub: BackgroundHub, source: str, body: bytes, length: int) -> socket.socket:
    path = f"/v1/teams/{TEAM}/requests/{MemberKey.generate().kid}"
    sock = _connect(hub, source)
    head = {"Content-Type": "application/json", "Content-Length": str(length)}
    sock.sendall(_request(hub, "POST", path, head) + body)
    return sock


def _join_reads(hub: BackgroundHub) -> float:
    text = httpx.get(hub.url + "/metrics", headers=METRICS_AUTH).text
    line = next(x for x in text.splitlines() if x.startswith("sealmem_hub_join_reads "))
    return float(line.split()[1])


@pytest.mark.slow
def test_one_address_stalls_at_most_a_quarter_of_the_join_readers(
    team_hub: tuple[BackgroundHub, HubWorld],
) -> None:
    """Eight join readers: one address stalls two; its third is told 503 at once,
    another address is still read."""
    hub, _ = team_hub
    stalled = [_join_post(hub, "127.0.0.1", b"{", 4000) for _ in range(2)]
    try:
        deadline = time.monotonic() + PROMPT_S
        while _join_reads(hub) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        with _join_post(hub, "127.0.0.1", b"{", 4000) as third:
            status, headers, doc = answer(third)
        assert (status, doc["error"]) == (503, "hub-busy")
        assert headers["retry-after"] == "1"
        with _join_post(hub, "127.0.0.2", b"{}", 2) as elsewhere:
            status, _, doc = answer(elsewhere)
        assert status != 503, doc  # read (and refused for what it says, not for room)
    finally:
        for sock in stalled:
            sock.close()


@pytest.mark.slow
def test_metrics_are_off_unless_the_operator_sets_a_token(tmp_path: Path) -> None:
    config = HubConfig(data_dir=tmp_path / "hub-data", port=free_port(), operator_token=TOKEN)
    with BackgroundHub(config) as hub:
        answer = httpx.get(hub.url + "/metrics", headers=METRICS_AUTH)
        assert answer.status_code == 404
        assert answer.json()["error"] == "not-found"
        assert "--metrics-token" in answer.json()["detail"]
        assert "sealmem_hub" not in answer.text
        assert httpx.get(hub.url + "/healthz").status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize(
    "auth",
    [None, "Bearer wrong-token-of-enough-length", f"Basic {METRICS_TOKEN}", METRICS_TOKEN],
    ids=["none", "wrong", "basic", "bare"],
)
def test_metrics_need_the_bearer_token(tmp_path: Path, auth: str | None) -> None:
    config = hub_config(tmp_path / "hub-data", port=free_port())
    with BackgroundHub(config) as hub:
        headers = {} if auth is None else {"authorization": auth}
        answer = httpx.get(hub.url + "/metrics", headers=headers)
        assert answer.status_code == 401
        assert answer.json()["error"] == "bad-auth-header"
        assert "sealmem_hub_stored_bytes" not in answer.text
        shown = httpx.get(hub.url + "/metrics", headers=METRICS_AUTH)
        assert shown.status_code == 200
        assert "sealmem_hub_stored_bytes" in shown.text


def test_a_short_metrics_token_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="metrics token is 5 characters"):
        HubConfig(data_dir=tmp_path, metrics_token="short")


@pytest.mark.slow
def test_hub_serve_takes_the_metrics_token_from_its_environment(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "SEALMEM_HUB_METRICS_TOKEN": METRICS_TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sealmem.client.cli", "hub", "serve", "--data",
         str(tmp_path / "hub-data"), "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stderr
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert httpx.get(url + "/metrics").status_code == 401
        assert httpx.get(url + "/metrics", headers=METRICS_AUTH).status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err
    assert METRICS_TOKEN not in err


@pytest.mark.slow
def test_a_long_poll_whose_client_left_gives_its_slot_back_at_once(
    team_hub: tuple[BackgroundHub, HubWorld],
) -> None:
    """A client that drops its connections mid-wait (a laptop changing networks, a sync
    loop restarted) must not find its four slots held until those polls time out."""
    hub, w = team_hub
    alice = w.nodes["alice"].key
    polls = [_poll(hub, alice, 20) for _ in range(4)]
    assert select.select(polls, [], [], 0.5)[0] == []  # all four wait
    for sock in polls:
        sock.close()
    deadline = time.monotonic() + PROMPT_S
    status = 0
    while time.monotonic() < deadline:  # the hub sees each disconnect within moments
        with _poll(hub, alice, 1) as again:
            status = answer(again)[0]
        if status == 200:
            break
        time.sleep(0.2)
    assert status == 200, "the slots of polls whose clients left must be free again"


@pytest.mark.slow
def test_hub_serve_sets_the_member_rate(tmp_path: Path) -> None:
    """``--member-rate``/``--member-burst``: an operator's own request rate per member
    (the defaults, 50/s and bursts of 400, would answer all ten requests below)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_hub_process(
        tmp_path / "hub-data", port, "--member-rate", "1", "--member-burst", "3"
    )
    try:
        homes = tmp_path / "homes"
        homes.mkdir()
        w = HubWorld(homes, url, lambda k: HubTransport(url, TEAM, k, operator_token=TOKEN))
        try:
            w.create()
            bob = w.join("bob")[0].key
        finally:
            w.close()
        path = f"/v1/teams/{TEAM}/projects/{PROJECT}/seqs"
        with httpx.Client(base_url=url, timeout=10) as client:
            answers = [client.get(path, headers=signed(bob, "GET", path)) for _ in range(10)]
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    statuses = [a.status_code for a in answers]
    assert 429 in statuses[:5], statuses
    refused = answers[statuses.index(429)]
    assert refused.json()["error"] == "rate-limited"
    assert int(refused.headers["Retry-After"]) >= 1
