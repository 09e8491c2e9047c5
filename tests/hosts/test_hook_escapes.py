"""What the hooks print reaches the agent host, which may show it in a terminal: a
teammate's control sequences and bidi overrides come out as visible escapes there too,
as in every other command (``sealmem.client.textsafe``)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hosts.conftest import SEALMEM
from tests.sync.conftest import PROJECT, World, make_world

pytestmark = pytest.mark.slow

HOSTILE = "deploy \x1b]0;pwned\x07 the release \x1b[2J branch \u202eesaeler\u202c \x9b31m only"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u202c")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    made = make_world(tmp_path, "alice")
    yield made
    made.close()


def _hook(home: Path, cwd: Path, name: str, **payload: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEALMEM_HOME": str(home), "HOME": str(cwd.parent)}
    stdin = json.dumps({"session_id": "s1", "cwd": str(cwd), **payload})
    return subprocess.run(
        [str(SEALMEM), "hook", name], input=stdin, capture_output=True, text=True,
        env=env, cwd=cwd, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("hook", "payload"),
    [
        ("session-start", {}),
        ("prompt", {"prompt": "deploy pwned release branch esaeler only: which one?"}),
    ],
)
def test_hook_output_carries_no_raw_control_or_bidi_characters(
    world: World, tmp_path: Path, hook: str, payload: dict[str, str]
) -> None:
    boss, alice = world.nodes["admin"], world.nodes["alice"]
    stored = alice.remember(HOSTILE, kind="warning").content
    alice.sync()
    boss.sync()
    cwd = tmp_path / "repos" / PROJECT
    (cwd / ".git").mkdir(parents=True)

    done = _hook(boss.home, cwd, hook, **payload)

    assert (done.returncode, done.stderr) == (0, "")
    # shown, visibly escaped: every hidden character as a JSON escape of the frame's quote
    # (this text is ASCII but for them)
    assert json.dumps(stored) in done.stdout
    assert "from alice" in done.stdout
    found = [f"U+{ord(ch):04X}" for ch in RAW if ch in done.stdout]
    assert not found, (found, done.stdout)
    assert "\\u001b]0;pwned\\u0007" in done.stdout
    assert "\n- [warning, from alice, trusted, flagged: hidden characters]" in done.stdout
