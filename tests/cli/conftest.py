"""Fixtures for the CLI tests: a fresh SEALMEM_HOME, a project cwd, and two ways to run.

``cli`` runs ``sealmem.client.cli.main`` in-process (fast; stdout/stderr captured);
``sealmem`` runs the installed console script as a real subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import Run, in_process

SEALMEM = Path(sys.executable).with_name("sealmem")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """SEALMEM_HOME in tmp_path, and a cwd whose project name is ``webshop``."""
    state = tmp_path / "home"
    project = tmp_path / "webshop"
    project.mkdir()
    monkeypatch.setenv("SEALMEM_HOME", str(state))
    monkeypatch.chdir(project)
    return state


@pytest.fixture
def cli(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Run]:
    return in_process(capsys, monkeypatch)


@pytest.fixture
def sealmem(home: Path) -> Callable[..., Run]:
    env = {**os.environ, "SEALMEM_HOME": str(home)}

    def run(*args: str, stdin: str | None = None) -> Run:
        proc = subprocess.run(
            [str(SEALMEM), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=Path.cwd(),
            timeout=60,
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return run
