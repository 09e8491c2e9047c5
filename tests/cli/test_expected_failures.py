"""``remember`` given text that is not UTF-8: one line with the fix, exit 1, no
traceback, nothing stored."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from tests.support.cli import Run

SEALMEM = Path(sys.executable).with_name("sealmem")
LATIN1 = "caf\xe9 au lait: the staging box has a new IP\n".encode("latin-1")


def one_line_error(done: Run) -> str:
    assert done.code == 1, done
    assert "Traceback" not in done.err, done.err
    lines = [line for line in done.err.splitlines() if line.strip()]
    assert len(lines) == 1, done.err
    assert lines[0].startswith("error: "), done.err
    return lines[0]


def stored(home: Path) -> int:
    with MemoryStore.open(home / "store.db") as store:
        return len(store.recent(limit=100, all_projects=True))


@pytest.mark.slow
@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_remember_refuses_non_utf8_stdin_in_a_real_process(home: Path, locale: str) -> None:
    env = {**os.environ, "SEALMEM_HOME": str(home), "LC_ALL": locale, "LANG": locale}
    env.pop("PYTHONIOENCODING", None)
    proc = subprocess.run(
        [str(SEALMEM), "remember", "-"],
        input=LATIN1, capture_output=True, env=env, cwd=Path.cwd(), timeout=60, check=False,
    )  # fmt: skip
    done = Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    line = one_line_error(done)
    assert "stdin is not UTF-8 text (byte 3 is e9 20 61 75)" in line
    assert "iconv -f latin1 -t utf-8" in line
    assert "nothing was stored" in line
    assert stored(home) == 0

    proc = subprocess.run(
        [str(SEALMEM), "remember", "-"],
        input=LATIN1.decode("latin-1").encode(), capture_output=True, env=env, cwd=Path.cwd(),
        timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert stored(home) == 1


def test_remember_refuses_an_argument_that_is_not_utf8(cli: Callable[..., Run], home: Path) -> None:
    """What a POSIX shell passes for bytes that are not UTF-8: surrogate escapes."""
    text = os.fsdecode(b"caf\xe9 au lait")
    line = one_line_error(cli("remember", text))
    assert "the memory text is not UTF-8 text (character 3)" in line
    assert stored(home) == 0


def test_remember_in_process_stdin_without_bytes(
    cli: Callable[..., Run], home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(os.fsdecode(b"caf\xe9\n")))
    line = one_line_error(cli("remember", "-"))
    assert "stdin is not UTF-8 text" in line
    assert stored(home) == 0
