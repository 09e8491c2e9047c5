"""Fixtures for the agent-host tests: a temporary HOME and SEALMEM_HOME, two ways to run.

``cli`` runs ``sealmem.client.cli.main`` in-process; ``script`` runs the
installed ``sealmem`` console script in a real subprocess (hooks are run that
way by hosts).  Both see the same temporary HOME, so no real host config of
the machine is ever read or written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sealmem.client.recall.api import MemoryStore
from tests.support.cli import Run, in_process

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
SEALMEM = Path(sys.executable).with_name("sealmem")


@dataclass
class Env:
    home: Path  # $HOME
    state: Path  # $SEALMEM_HOME
    project: Path  # cwd: a git repository named "webshop"
    environ: dict[str, str]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    home, state, project = tmp_path / "home", tmp_path / "state", tmp_path / "webshop"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SEALMEM_HOME", str(state))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(project)
    environ = dict(os.environ)
    return Env(home, state, project, environ)


@pytest.fixture
def cli(
    env: Env, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Run]:
    return in_process(capsys, monkeypatch)


@pytest.fixture
def script(env: Env) -> Callable[..., Run]:
    def run(*args: str, stdin: str = "", timeout: float = 30) -> Run:
        done = subprocess.run(
            [str(SEALMEM), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env.environ,
            cwd=env.project,
            timeout=timeout,
            check=False,
        )
        return Run(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture
def store(env: Env) -> Iterator[MemoryStore]:
    """The store the CLI and the hooks use (``$SEALMEM_HOME/store.db``), closed afterwards."""
    opened = MemoryStore.open()
    yield opened
    opened.close()
