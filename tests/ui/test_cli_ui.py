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

pytestmark = pytest.mark.slow


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


def test_sigterm_stops_it_and_ends_the_process_as_sigterm_does(
    seeded: Seeded, tmp_path: Path
) -> None:
    browser = tmp_path / "browser.sh"
    browser.write_text("#!/bin/sh\nexit 0\n")
    browser.chmod(0o755)
    proc = _start(seeded, BROWSER=str(browser))
    try:
        port = int(_url(proc).split(":")[2].split("/")[0])
        deadline = time.monotonic() + 20
        while not (doors := list(seeded.home.glob("ui-*.html"))):
            assert time.monotonic() < deadline  # the browser's way in, holding the token
            time.sleep(0.1)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGTERM
    assert "Traceback" not in err
    assert not doors[0].exists()  # the token does not outlive the run


def test_a_browser_that_blocks_neither_holds_the_viewer_nor_outlives_its_token(
    seeded: Seeded, tmp_path: Path
) -> None:
    """A ``BROWSER`` command that runs until its window closes (webbrowser waits for it):
    the viewer answers meanwhile, and a SIGTERM still removes the token's file."""
    pid_file = tmp_path / "browser.pid"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho $$ > "{pid_file}"\nexec sleep 60 >/dev/null 2>&1\n')
    browser.chmod(0o755)
    proc = _start(seeded, BROWSER=str(browser))
    try:
        url = _url(proc)
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        doors = list(seeded.home.glob("ui-*.html"))
        assert len(doors) == 1
        host, port = url.split("/")[2].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            assert conn.recv(64).startswith(b"HTTP/1.1 ")  # served while the browser runs
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        if pid_file.exists() and pid_file.read_text().strip():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert proc.returncode == -signal.SIGTERM
    assert "Traceback" not in err
    assert not doors[0].exists()  # the token does not outlive the run


def test_a_port_in_use_is_one_clear_sentence(seeded: Seeded) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        proc = _start(seeded, "--port", str(port), BROWSER="/bin/true")
        out, err = proc.communicate(timeout=60)
    finally:
        busy.close()
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in err
    assert "in use" in err
    assert "Traceback" not in err
    assert "token" not in out
    assert not list(seeded.home.glob("ui-*.html"))  # no way in when nothing listens


@pytest.mark.parametrize("port", ["65536", "http"])
def test_a_bad_port_is_refused_before_anything_listens(seeded: Seeded, port: str) -> None:
    proc = _start(seeded, "--no-open", "--port", port)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "--port" in err
    assert "Traceback" not in err
    assert out == ""


def test_the_browser_can_connect_as_soon_as_it_is_opened(seeded: Seeded, tmp_path: Path) -> None:
    """A running browser opens the tab at once, before the server has started: the
    socket must already listen (the kernel queues the connection), or the page fails."""
    record = tmp_path / "connected.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(
        f"#!{sys.executable}\n"
        "import re, socket, sys\n"
        "page = open(sys.argv[1].removeprefix('file://')).read()\n"
        "port = int(re.search(r'127\\.0\\.0\\.1:(\\d+)/', page).group(1))\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', port), timeout=5).close()\n"
        "    said = 'connected'\n"
        "except OSError as exc:\n"
        "    said = repr(exc)\n"
        f"open({str(record)!r}, 'w').write(said)\n"
    )
    browser.chmod(0o755)
    proc = _start(seeded, BROWSER=str(browser))
    try:
        _url(proc)
        deadline = time.monotonic() + 20
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        _stop(proc)
    assert record.read_text() == "connected"


def test_without_a_display_no_terminal_browser_takes_over(seeded: Seeded, tmp_path: Path) -> None:
    """Over ssh (no display) Python's webbrowser would run a console browser (lynx, w3m,
    www-browser) in the same terminal; the URL printed is the way in there."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ran = tmp_path / "ran.txt"
    for name in ("www-browser", "lynx", "w3m", "xdg-open"):
        fake = bin_dir / name
        fake.write_text(f'#!/bin/sh\necho {name} >> "{ran}"\n')
        fake.chmod(0o755)
    env = {
        k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")
    }
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    env["SEALMEM_HOME"] = str(seeded.home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sealmem.client.cli", "ui"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _url(proc)
        time.sleep(2)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.stdout is not None
    assert proc.stderr is not None
    with proc.stdout, proc.stderr:
        said, err = proc.stdout.read(), proc.stderr.read()  # after what _url() buffered
    assert not ran.exists(), ran.read_text()
    assert "no display" in said
    assert "Traceback" not in err
