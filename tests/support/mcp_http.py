"""``sealmem mcp --http`` run as a process by tests: where it listens and its token."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["INIT", "MCP_HEADERS", "Served", "banner", "serving_mcp", "start", "stop"]

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@dataclass
class Served:
    url: str
    token: str
    home: Path
    proc: subprocess.Popen[str]

    def auth(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", **MCP_HEADERS, **extra}


def start(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    work = tmp_path / "webshop"
    work.mkdir(exist_ok=True)
    return subprocess.Popen(
        [sys.executable, "-m", "sealmem.client.cli", "mcp", "--http", "--port", "0", *args],
        env={**os.environ, "SEALMEM_HOME": str(tmp_path / "home"), **env},
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def banner(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """The URL line and the token line the server prints to stderr at start."""
    assert proc.stderr is not None
    url_line, token_line = proc.stderr.readline(), proc.stderr.readline()
    found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", url_line)
    assert found, url_line + token_line
    return found.group(1), token_line


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    return err


@contextlib.contextmanager
def serving_mcp(tmp_path: Path, *args: str) -> Iterator[Served]:
    """``sealmem mcp --http`` in ``tmp_path/webshop`` for the block, with its token."""
    proc = start(tmp_path, *args)
    try:
        url, token_line = banner(proc)
        found = re.search(r"Bearer ([A-Za-z0-9_-]{43})'", token_line)
        assert found, token_line
        yield Served(url, found.group(1), tmp_path / "home", proc)
    finally:
        if proc.poll() is None:
            stop(proc)
