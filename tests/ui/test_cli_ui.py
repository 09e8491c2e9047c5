"""``sealmem ui`` as a process: where it listens, what it hands the browser, how it stops."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import Seeded


def _start(seeded: Seeded, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sealmem.client.cli", "ui", *args],
        env={**os.environ, "SEALMEM_HOME": str(seeded.home), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _url(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"(http://127\.0\.0\.1:\d+/\?token=\S+)", line)
    assert found, line
    return found.group(1)


def _stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    """Ctrl-C, as a person stops it: the exit code and what it wrote to stderr."""
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    return proc.returncode, err


def _listeners(port: int) -> list[tuple[str, str]]:
    """(table, local address) of every socket listening on ``port`` (Linux /proc)."""
    found = []
    for table in ("tcp", "tcp6"):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.append((table, address))
    return found


def test_the_browser_gets_a_private_file_never_the_token(seeded: Seeded, tmp_path: Path) -> None:
    """A browser started with the URL keeps it in its command line, readable by every
    user of the machine, and the port is open to all of them."""
    argv_file = tmp_path / "browser-argv.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{argv_file}"\n')
    browser.chmod(0o755)
    proc = _start(seeded, BROWSER=str(browser))
    try:
        url = _url(proc)
        token = url.split("token=")[1]
        deadline = time.monotonic() + 20
        while not argv_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        argv = argv_file.read_text().split()
        assert token not in " ".join(argv)
        assert len(argv) == 1
        assert argv[0].startswith("file://")
        door = Path(argv[0].removeprefix("file://"))
        assert stat.S_IMODE(door.stat().st_mode) == 0o600
        assert door.parent == seeded.home
        assert f'content="0;url={url}"' in door.read_text()
    finally:
        code, err = _stop(proc)
    assert "Traceback" not in err
    assert code in (0, 130)
    assert not door.exists()  # the token does not outlive the run


def test_it_listens_on_loopback_only_and_stops_cleanly_on_ctrl_c(seeded: Seeded) -> None:
    proc = _start(seeded, "--no-open")
    try:
        url = _url(proc)
        port = int(url.split(":")[2].split("/")[0])
        deadline = time.monotonic() + 20
        while True:  # the URL is printed just before the server starts to listen
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        if Path("/proc/net/tcp").exists():
            assert _listeners(port) == [("tcp", "0100007F")]  # 127.0.0.1, no IPv6, no 0.0.0.0
    finally:
        code, err = _stop(proc)
    assert code in (0, 130)
    assert "Traceback" not in err
    assert err.strip() == ""


def test_a_port_in_use_is_one_clear_sentence(seeded: Seeded) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        proc = _start(seeded, "--no-open", "--port", str(port))
        out, err = proc.communicate(timeout=60)
    finally:
        busy.close()
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert "in use" in err
    assert "Traceback" not in err
    assert "token" not in out


@pytest.mark.parametrize("port", ["65536", "http"])
def test_a_bad_port_is_refused_before_anything_listens(seeded: Seeded, port: str) -> None:
    proc = _start(seeded, "--no-open", "--port", port)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "--port" in err
    assert "Traceback" not in err
    assert out == ""
