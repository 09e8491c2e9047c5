"""A hook never fails the host, also when printing fails: a pipe in a legacy encoding
(Windows writes pipes in the ANSI code page) or a host that closed the pipe.  Run as the
host runs it: the installed ``sealmem`` script in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sealmem.client import MemoryStore

SEALMEM = Path(sys.executable).with_name("sealmem")
TEXT = "the deploy script needs the caf\u00e9 \u2615 flag and \u6f22\u5b57 names"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    with MemoryStore.open(tmp_path / "store.db", author="me") as store:
        store.remember(TEXT, kind="warning", project="shared")
    return tmp_path


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "SEALMEM_HOME": str(home), **extra}


def test_session_start_prints_utf8_to_a_pipe_in_a_legacy_encoding(home: Path) -> None:
    for encoding in ("cp1252", "ascii"):
        done = subprocess.run(
            [str(SEALMEM), "hook", "session-start"],
            input=json.dumps({"cwd": str(home)}).encode(),
            capture_output=True,
            env=_env(home, PYTHONIOENCODING=encoding),
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        assert done.stderr == b""
        assert TEXT in done.stdout.decode("utf-8")


def test_a_host_that_closed_the_pipe_does_not_fail_the_hook(home: Path) -> None:
    proc = subprocess.Popen(
        [str(SEALMEM), "hook", "session-start"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(home),
    )
    assert proc.stdout is not None
    assert proc.stdin is not None
    assert proc.stderr is not None
    proc.stdout.close()
    proc.stdin.write(json.dumps({"cwd": str(home)}).encode())
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
    proc.stderr.close()
