"""Docs that cannot drift: every CLI command and MCP tool is in the README, and CI
runs the README's own test command."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer.main

from sealmem.client.cli.root import app
from sealmem.client.mcp.server import create_server

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _command_paths(command: Any, prefix: tuple[str, ...] = ()) -> list[str]:
    subcommands = getattr(command, "commands", None)
    if not subcommands:
        return [" ".join(prefix)]
    paths: list[str] = []
    for name, sub in subcommands.items():
        paths += _command_paths(sub, (*prefix, name))
    return paths


COMMANDS = _command_paths(typer.main.get_command(app))


def test_the_cli_has_commands() -> None:
    assert {"remember", "recall", "sync", "team create", "admin approve"} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS)
def test_every_cli_command_is_in_the_readme(path: str) -> None:
    assert f"sealmem {path}" in README, f"README.md does not document 'sealmem {path}'"


def _tool_names() -> list[str]:
    async def names() -> list[str]:
        server = create_server(project="docs")
        return [tool.name for tool in await server.list_tools()]

    return anyio.run(names)


@pytest.mark.parametrize("tool", _tool_names())
def test_every_mcp_tool_is_in_the_readme(tool: str) -> None:
    assert re.search(rf"\| `{tool}` \|", README), f"README.md's MCP table lacks `{tool}`"


def test_ci_runs_the_readme_test_command() -> None:
    block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert block is not None, "README.md has no quick-start shell block"
    lines = [ln for ln in block.group(1).splitlines() if ln and not ln.startswith("#")]
    assert len(lines) == 2, "the quick start is exactly two commands"
    assert "sealmem demo" in lines[0]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert lines[1].strip() in ci, f"CI does not run the README's test command {lines[1]!r}"


def test_every_file_the_readme_links_exists() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)\)", README)
    local = [t for t in targets if "://" not in t]
    assert "client/ui/screenshot-search.png" in local
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links files that do not exist: {missing}"
