"""Unfinished anonymous uploads cost the hub process no memory.

The hub runs in its own process (``sealmem.hub.server.serve``), so that its
resident set is measured alone.  Before, each unsigned PUT had up to 12 MiB of
body buffered before anyone looked at its headers: 24 unfinished ones took the
RSS from 49 to 360 MiB, and about 75 would have filled the shipped 1 GiB unit.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.hub.server import free_port

from .conftest import PROJECT, TEAM, TOKEN, wait_healthy

pytestmark = pytest.mark.slow

UPLOADS = 24
EACH = 8 * 1024 * 1024  # sent of a declared 12 MiB, never finished
PIECE = 256 * 1024
#: what 24 refused uploads may add to the hub's RSS (sockets, log lines, allocator slack)
BOUND = 32 * 1024 * 1024


@pytest.fixture
def hub_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    code = (
        "import sys; from pathlib import Path; from sealmem.hub.config import HubConfig; "
        "from sealmem.hub.server import serve; "
        "serve(HubConfig(data_dir=Path(sys.argv[1]), port=int(sys.argv[2]), "
        "operator_token=sys.argv[3]))"
    )
    cmd = [sys.executable, "-c", code, str(tmp_path / "hub-data"), str(port), TOKEN]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(f"http://127.0.0.1:{port}")
        yield proc, port
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def _upload(port: int) -> socket.socket:
    """An unsigned PUT of a chunk declaring 12 MiB, of which up to 8 MiB are sent."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=2.0)
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{'a' * 26}/{'b' * 64}"
    head = f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {12 * 1024 * 1024}\r\n\r\n"
    sock.sendall(head.encode())
    sent = 0
    try:
        while sent < EACH:
            if select.select([sock], [], [], 0)[0]:
                break  # the hub answered (and stops reading)
            sock.sendall(b"\0" * PIECE)
            sent += PIECE
    except OSError:  # the hub closed, or stopped reading and the buffers are full
        pass
    return sock


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_unfinished_anonymous_uploads_do_not_grow_the_hub(
    hub_process: tuple[subprocess.Popen[bytes], int],
) -> None:
    proc, port = hub_process
    before = _rss(proc.pid)
    held = [_upload(port) for _ in range(UPLOADS)]  # all open at once
    try:
        grown = _rss(proc.pid) - before
    finally:
        for sock in held:
            sock.close()
    load = os.getloadavg()[0]
    assert grown < BOUND, f"{UPLOADS} unfinished uploads grew the hub by {grown} B (load {load})"
