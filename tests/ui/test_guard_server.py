"""The guard over a real uvicorn on 127.0.0.1, spoken to through raw sockets.

What a browser never sends but a hostile local client may: a form whose body
never comes, and WebSocket handshakes (browsers let any page open one to
127.0.0.1; no same-origin rule applies to them).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from sealmem.client.ui import guard
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import Guard, Secrets

from .conftest import Seeded


@dataclass
class Viewer:
    port: int
    secrets: Secrets
    cookie: str
    errors: list[logging.LogRecord]

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _exchange(sock: socket.socket, request: bytes) -> bytes:
    """Send ``request`` and read the answer's head (and what came with it)."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(65536)
        if not part:
            break
        data += part
    return data


async def _accepting(scope: Scope, receive: Receive, send: Send) -> None:
    """An app that accepts every WebSocket (as a future viewer route would)."""
    if scope["type"] == "websocket":
        await receive()
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": 1000})


@contextlib.contextmanager
def _serve(seeded: Seeded, accepting: bool) -> Iterator[Viewer]:
    """The viewer (or the guard before an app that accepts WebSockets) under a real
    uvicorn in a thread, signed in (its cookie)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    secrets = Secrets()
    viewer = create_app(seeded.home, secrets, allowed_hosts(port))
    app = Guard(_accepting, secrets=secrets, hosts=allowed_hosts(port)) if accepting else viewer
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    )
    records = _Records()
    logging.getLogger("uvicorn.error").addHandler(records)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "the viewer did not start"
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            head = _exchange(
                c,
                f"GET /?token={secrets.token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                "Connection: close\r\n\r\n".encode(),
            )
        cookie = next(
            line.split(":", 1)[1].split(";")[0].strip()
            for line in head.decode("latin-1").split("\r\n")
            if line.lower().startswith("set-cookie:")
        )
        yield Viewer(port, secrets, cookie, records.records)
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
        logging.getLogger("uvicorn.error").removeHandler(records)


@pytest.fixture
def viewer(seeded: Seeded) -> Iterator[Viewer]:
    with _serve(seeded, accepting=False) as served:
        yield served


@pytest.fixture
def guarded(seeded: Seeded) -> Iterator[Viewer]:
    with _serve(seeded, accepting=True) as served:
        yield served


@pytest.mark.slow
def test_a_form_whose_body_never_comes_is_answered_408(
    viewer: Viewer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the guard waited for the body for ever (the request stayed open)."""
    monkeypatch.setattr(guard, "BODY_TIMEOUT_S", 1.0, raising=False)
    with socket.create_connection(("127.0.0.1", viewer.port), timeout=15) as sock:
        started = time.monotonic()
        head = _exchange(
            sock,
            (
                f"POST /remember HTTP/1.1\r\nHost: {viewer.host}\r\n"
                f"Origin: http://{viewer.host}\r\nCookie: {viewer.cookie}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                "Content-Length: 1000\r\n\r\ncsrf="
            ).encode(),
        )
    assert head.startswith(b"HTTP/1.1 408 "), head
    assert time.monotonic() - started < 10
    assert b"content-security-policy" in head.lower()


def _handshake(viewer: Viewer, path: str = "/", **headers: str) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        f"GET {path} HTTP/1.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    fields = {
        "Host": viewer.host,
        "Origin": f"http://{viewer.host}",
        "Cookie": viewer.cookie,
        **headers,
    }
    lines += [f"{name}: {value}" for name, value in fields.items() if value]
    with socket.create_connection(("127.0.0.1", viewer.port), timeout=15) as sock:
        return _exchange(sock, ("\r\n".join(lines) + "\r\n\r\n").encode())


@pytest.mark.slow
@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},  # a page on another site
        {"Origin": "http://127.0.0.1:3000"},  # another local server
        {"Host": "evil.example:80"},  # DNS rebinding
        {"Cookie": ""},  # not signed in
        {"Origin": ""},  # no Origin: not a browser of this viewer
    ],
    ids=["other-site", "other-port", "rebound-host", "no-cookie", "no-origin"],
)
def test_websocket_handshakes_pass_the_same_checks(
    guarded: Viewer, viewer: Viewer, headers: dict[str, str]
) -> None:
    """Before, the guard let every WebSocket through: only the viewer having no
    WebSocket route refused them (a route added later would have been open)."""
    head = _handshake(guarded, **headers)
    assert head.startswith(b"HTTP/1.1 403 "), head
    assert not guarded.errors, [r.getMessage() for r in guarded.errors]
    assert _handshake(viewer, **headers).startswith(b"HTTP/1.1 403 ")


@pytest.mark.slow
def test_a_handshake_of_this_viewer_signed_in_reaches_the_app(guarded: Viewer) -> None:
    assert _handshake(guarded).startswith(b"HTTP/1.1 101 ")


@pytest.mark.slow
def test_the_viewer_serves_no_websocket_even_signed_in(viewer: Viewer) -> None:
    for path in ("/", "/static/app.css", "/m/x"):
        assert _handshake(viewer, path).startswith(b"HTTP/1.1 403 "), path
    assert not viewer.errors, [r.getMessage() for r in viewer.errors]


@pytest.mark.slow
def test_a_form_cut_off_by_a_disconnect_is_not_acted_on(viewer: Viewer, seeded: Seeded) -> None:
    """A client that goes away mid-body (a closed tab, a killed curl) sent only part of
    its form: before, the guard handed the part to the app, which stored a truncated
    memory ("content" cut mid-sentence)."""
    from sealmem.client import MemoryStore
    from sealmem.client.paths import local_author, store_path

    part = f"csrf={viewer.secrets.csrf}&project=webapp&content=Deploys+go+out+on+Tuesd"
    with socket.create_connection(("127.0.0.1", viewer.port), timeout=15) as sock:
        sock.sendall(
            (
                f"POST /remember HTTP/1.1\r\nHost: {viewer.host}\r\n"
                f"Origin: http://{viewer.host}\r\nCookie: {viewer.cookie}\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {len(part) + 200}\r\n\r\n{part}"
            ).encode()
        )
        time.sleep(0.5)  # the first part is read
    time.sleep(1.0)  # the server sees the disconnect and answers (to nobody)
    home = seeded.home
    with MemoryStore.open(store_path(home), author=local_author(home)) as store:
        texts = [m.content for m in store.recent(limit=100, all_projects=True)]
    assert not any("Deploys go out" in text for text in texts), texts
