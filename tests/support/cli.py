"""Running the ``sealmem`` CLI from tests: in-process (fast) with captured output."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
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
