"""Start-up: ``sealmem hook prompt`` imports only what a hook needs, and answers as before.

Timings are measured by ``tests/bench/bench_startup.py``, not here; these tests check
what is imported (``python -X importtime`` of the real console script) and that the
fast path prints what the typer command prints.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.launch import _hook_args
from tests.support.cli import Run

SEALMEM = Path(sys.executable).with_name("sealmem")
NOT_IN_A_HOOK = ("httpx", "starlette", "uvicorn", "nacl", "mcp", "typer", "pydantic", "tomlkit")


def _imported(argv: list[str], stdin: str, home: Path) -> tuple[set[str], str]:
    env = {**os.environ, "SEALMEM_HOME": str(home), "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(
        argv, input=stdin, capture_output=True, text=True, env=env, timeout=60, check=True
    )
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return modules, done.stdout


def _prompt(home: Path) -> str:
    return json.dumps({"prompt": "how do we run the pytest suite", "cwd": str(Path.cwd())})


@pytest.mark.slow
def test_hook_prompt_imports_no_network_crypto_or_cli_framework(
    home: Path, sealmem: Callable[..., Run]
) -> None:
    assert sealmem("remember", "run the pytest suite with pytest -q", "--kind", "fact").code == 0
    modules, out = _imported([str(SEALMEM), "hook", "prompt"], _prompt(home), home)
    assert "pytest -q" in out  # the hook did its work: it recalled the memory
    assert "sealmem.client.store.api" in modules
    heavy = sorted(m for m in modules if m.split(".")[0] in NOT_IN_A_HOOK)
    assert heavy == []


@pytest.mark.slow
def test_hook_prompt_loads_no_import_path_trust_objects_or_package_metadata(
    home: Path, sealmem: Callable[..., Run]
) -> None:
    """What a recall never runs stays out of a hook's process (each was loaded at import
    and cost the hook 57 ms in all: tests/bench/README.md "The prompt hook's imports"):
    the export-file import path, the protocol's private trust and state objects, the
    package metadata reader (the semantic extra's files are found with it)."""
    assert sealmem("remember", "run the pytest suite with pytest -q", "--kind", "fact").code == 0
    modules, out = _imported([str(SEALMEM), "hook", "prompt"], _prompt(home), home)
    assert "pytest -q" in out  # it opened the store and recalled
    unneeded = {
        "sealmem.client.store.transfer",
        "sealmem.client.store.jsonscan",
        "sealmem.protocol.private",
        "sealmem.protocol.private_trust",
        "sealmem.protocol.state",
        "importlib.metadata",
    }
    assert sorted(modules & unneeded) == []


@pytest.mark.slow
def test_the_fast_hook_prints_what_the_typer_command_prints(
    home: Path, sealmem: Callable[..., Run]
) -> None:
    assert sealmem("remember", "run the pytest suite with pytest -q", "--kind", "fact").code == 0
    _, fast = _imported([str(SEALMEM), "hook", "prompt"], _prompt(home), home)
    _, slow = _imported(
        [sys.executable, "-m", "sealmem.client.cli", "hook", "prompt"], _prompt(home), home
    )
    assert fast
    assert fast == slow


def test_importing_the_cli_package_loads_no_typer() -> None:
    code = "import sys, sealmem.client.cli; print('typer' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["prompt"], ("prompt", None)),
        (["stop", "--home", "/h"], ("stop", Path("/h"))),
        (["--home=/h", "session-start"], ("session-start", Path("/h"))),
        (["prompt", "--help"], None),
        (["--help"], None),
        ([], None),
        (["prompt", "--home"], None),
        (["prompt", "stop"], None),
    ],
)
def test_only_a_plain_hook_line_takes_the_fast_path(
    args: list[str], expected: tuple[str, Path | None] | None
) -> None:
    assert _hook_args(args) == expected


NOT_IN_A_LIGHT_COMMAND = ("pydantic", "rich", "httpx", "starlette", "uvicorn", "mcp")


@pytest.mark.slow
@pytest.mark.parametrize(
    "args", [["list"], ["recall", "pytest", "-n", "3"], ["--help"], ["recall", "--help"]]
)
def test_light_commands_import_neither_pydantic_nor_rich(
    home: Path, sealmem: Callable[..., Run], args: list[str]
) -> None:
    # typer would convert every option through pydantic and draw help with rich: about
    # 90 + 150 ms of CPU before the command does anything (bench_startup.py).
    assert sealmem("remember", "run the pytest suite with pytest -q", "--kind", "fact").code == 0
    modules, out = _imported([str(SEALMEM), *args], "", home)
    assert out.strip()
    heavy = sorted(m for m in modules if m.split(".")[0] in NOT_IN_A_LIGHT_COMMAND)
    assert heavy == []
