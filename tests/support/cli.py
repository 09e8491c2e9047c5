"""Running the ``sealmem`` CLI from tests: in-process (fast) with captured output."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["Run", "in_process"]


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def in_process(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Run]:
    """``run(*args, stdin=None)``: ``sealmem.client.cli.main`` with stdout/stderr captured."""
    from sealmem.client.cli import main

    def run(*args: str, stdin: str | None = None) -> Run:
        capsys.readouterr()
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def per_home(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Run]:
    """``cli(who, *args, code=0)``: the CLI in the home ``root/who`` (run from
    ``root/webapp``), with its exit code checked."""
    cwd = root / "webapp"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    run = in_process(capsys, monkeypatch)

    def as_(who: str, *args: str, code: int = 0) -> Run:
        monkeypatch.setenv("SEALMEM_HOME", str(root / who))
        done = run(*args)
        assert done.code == code, done
        return done

    return as_
