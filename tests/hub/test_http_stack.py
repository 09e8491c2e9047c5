"""Both HTTP stacks of ``sealmem hub serve`` over a real uvicorn, through raw sockets.

The hub runs on httptools + uvloop by default (uvicorn[standard]) and on h11 +
asyncio with ``--http h11``.  h11 bounds the request head by itself; httptools
(llhttp) buffers a header however long it grows, so the hub's protocol counts
the head's bytes: either stack answers 400 and closes past 16 KiB, and serves a
head just under it, and a body that arrives in the same read as its head.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.hub.config import HubConfig
from sealmem.hub.server import MAX_HEAD_BYTES, BackgroundHub, free_port
from sealmem.protocol.errors import InputError

from .conftest import hub_config

STACKS = ["httptools", "h11"]


@pytest.fixture(params=STACKS)
def hub(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackgroundHub]:
    config = hub_config(tmp_path / "hub-data", port=free_port(), http_stack=request.param)
    with BackgroundHub(config) as running:
        yield running


def _send(hub: BackgroundHub, *parts: bytes, pause_s: float = 0.0) -> bytes:
    """Send ``parts`` (pausing between them so each is its own read), then read the
    answer until the hub closes the connection or 5 s pass."""
    with socket.create_connection((hub.config.host, hub.config.port), timeout=5) as sock:
        for part in parts:
            try:
                sock.sendall(part)
            except OSError:
                break  # refused and closed before the rest was sent
            time.sleep(pause_s)
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                part = sock.recv(65536)
            except ConnectionResetError:
                break
            if not part:
                break
            answer += part
        return answer


def _get(extra_header_bytes: int, body: bytes = b"") -> bytes:
    head = (
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        f"X-Padding: {'a' * extra_header_bytes}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


@pytest.mark.slow
def test_a_head_over_the_bound_gets_400_across_many_reads(hub: BackgroundHub) -> None:
    """A header value fed a few KiB at a time: llhttp alone would buffer it for ever."""
    whole = _get(4 * MAX_HEAD_BYTES)
    step = 4096
    parts = [whole[i : i + step] for i in range(0, len(whole), step)]
    answer = _send(hub, *parts, pause_s=0.01)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert b'"ok"' not in answer


@pytest.mark.slow
def test_a_head_under_the_bound_is_served(hub: BackgroundHub) -> None:
    answer = _send(hub, _get(MAX_HEAD_BYTES - 1024))
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
    assert b'{"ok":true}' in answer


@pytest.mark.slow
def test_a_large_body_in_the_same_read_as_its_head_is_not_counted(hub: BackgroundHub) -> None:
    answer = _send(hub, _get(64, body=b"x" * (4 * MAX_HEAD_BYTES)))
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


@pytest.mark.slow
def test_requests_on_one_kept_alive_connection_each_get_the_whole_bound(
    hub: BackgroundHub,
) -> None:
    """The count starts again at each request: three heads of 12 KiB on one connection."""
    one = _get(12 * 1024).replace(b"Connection: close\r\n", b"")
    answer = _send(hub, one, one, one, pause_s=0.2)
    assert answer.count(b"HTTP/1.1 200 ") == 3, answer[:300]


def test_an_unknown_stack_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"'h2'.*httptools, h11"):
        HubConfig(data_dir=tmp_path, http_stack="h2")


def test_the_default_stack_is_httptools() -> None:
    assert HubConfig(data_dir=Path("unused")).http_stack == "httptools"


@pytest.mark.slow
def test_a_head_that_trickles_is_cut_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slowloris: a head sent a few bytes at a time, never finished, holds no connection
    past the head timeout (httptools, the default stack; h11 behind Caddy)."""
    from sealmem.hub import server

    monkeypatch.setattr(server, "HEAD_TIMEOUT_S", 0.5)
    config = hub_config(tmp_path / "hub-data", port=free_port(), http_stack="httptools")
    with (
        BackgroundHub(config) as hub,
        socket.create_connection((config.host, config.port), timeout=10) as sock,
    ):
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        closed = False
        for _ in range(40):  # a header byte every 0.1 s: 4 s if never cut off
            try:
                sock.sendall(b"X")
                time.sleep(0.1)
            except OSError:
                closed = True
                break
        if not closed:
            sock.settimeout(2)
            try:
                closed = sock.recv(1024) == b""
            except ConnectionResetError:
                closed = True
            except TimeoutError:
                closed = False  # still open: the head was never cut off
        assert closed
        assert hub.url  # the hub itself still serves
