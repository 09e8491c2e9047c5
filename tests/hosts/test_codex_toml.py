"""`sealmem install codex` for every way a user writes ``mcp_servers`` in config.toml."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.conftest import SEALMEM, Env, Run

CLI = Callable[..., Run]

HEAD = '# Codex CLI configuration\nmodel = "gpt-5-codex"  # the default\n'
# Unrelated to sealmem, with comments and odd spacing: must survive byte for byte.
PROFILES = (
    "\n# Profiles I switch between\n"
    "[profiles.fast]\n"
    'model   =   "gpt-5-mini"   # trailing comment kept as is\n'
    '# approval_policy = "never"  (commented out on purpose)\n'
)
DOCS = {"command": "npx", "args": ["-y", "mcp-server-docs"]}

STYLES = {
    "standard tables": HEAD
    + '\n[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "mcp-server-docs"]\n'
    + PROFILES,
    "servers table": HEAD
    + '\n[mcp_servers]\ndocs.command = "npx"\ndocs.args = ["-y", "mcp-server-docs"]\n'
    + PROFILES,
    "inline table": HEAD
    + 'mcp_servers = { docs = { command = "npx", args = ["-y", "mcp-server-docs"] } }\n'
    + PROFILES,
    "dotted keys": HEAD
    + 'mcp_servers.docs.command = "npx"\nmcp_servers.docs.args = ["-y", "mcp-server-docs"]\n'
    + PROFILES,
    "servers last": HEAD + PROFILES + '\n[mcp_servers.docs]\ncommand = "npx"  # mine\n'
    'args = ["-y", "mcp-server-docs"]\n',
    "no servers": HEAD + PROFILES,
    "no final newline": HEAD + PROFILES + '\n[mcp_servers.docs]\ncommand = "npx"\n'
    'args = ["-y", "mcp-server-docs"]',
}


def _config(env: Env, text: str) -> Path:
    path = env.home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _entry(env: Env) -> dict[str, Any]:
    command = str(SEALMEM.absolute())
    return {"command": command, "args": ["mcp"], "env": {"SEALMEM_HOME": str(env.state)}}


def _doc(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("style", list(STYLES))
def test_install_repair_uninstall_for_each_way_of_writing_the_table(
    cli: CLI, env: Env, style: str
) -> None:
    original = STYLES[style]
    path = _config(env, original)
    before = tomllib.loads(original)

    run = cli("install", "codex")
    assert run.code == 0, run.err
    after = _doc(path)
    assert after["mcp_servers"].pop("sealmem") == _entry(env)
    if not after["mcp_servers"]:
        del after["mcp_servers"]
    assert after == before  # nothing but our entry was added
    text = path.read_text(encoding="utf-8")
    assert text.startswith(HEAD)
    assert PROFILES in text  # the unrelated commented section, byte for byte
    assert text.count("sealmem") == text.count(str(SEALMEM.absolute())) + 1

    assert "nothing to change" in cli("install", "codex").out
    assert "nothing to change" in cli("install", "codex", "--repair").out

    # A moved installation: refused without --repair, updated where it is with it.
    path.write_text(text.replace(str(SEALMEM.absolute()), "/gone/sealmem"), encoding="utf-8")
    assert "--repair" in cli("install", "codex").err
    run = cli("install", "codex", "--repair")
    assert run.code == 0, run.err
    assert path.read_text(encoding="utf-8") == text

    run = cli("uninstall", "codex")
    assert run.code == 0, run.err
    assert path.read_bytes() == original.encode() + (b"" if original.endswith("\n") else b"\n")


HAND_WRITTEN = {
    "table": '[mcp_servers.sealmem]\ncommand = "{cmd}"  # I wrote this\nargs = ["mcp"]\n'
    'env = {{ SEALMEM_HOME = "{home}" }}\n',
    "table with env table": '[mcp_servers.sealmem]\ncommand = "{cmd}"\nargs = ["mcp"]\n\n'
    '[mcp_servers.sealmem.env]\nSEALMEM_HOME = "{home}"\n',
    "inline": 'mcp_servers = {{ sealmem = {{ command = "{cmd}", args = ["mcp"], '
    'env = {{ SEALMEM_HOME = "{home}" }} }} }}\n',
    "dotted": 'mcp_servers.sealmem.command = "{cmd}"\nmcp_servers.sealmem.args = ["mcp"]\n'
    'mcp_servers.sealmem.env.SEALMEM_HOME = "{home}"\n',
}


@pytest.mark.slow
@pytest.mark.parametrize("style", list(HAND_WRITTEN))
def test_a_hand_written_sealmem_entry_is_recognised_and_repaired(
    cli: CLI, env: Env, style: str
) -> None:
    def config(cmd: Path | str) -> str:
        return HEAD + HAND_WRITTEN[style].format(cmd=cmd, home=env.state) + PROFILES

    path = _config(env, config(SEALMEM.absolute()))
    run = cli("install", "codex")
    assert run.code == 0, run.err
    assert "nothing to change" in run.out
    assert path.read_text(encoding="utf-8") == config(SEALMEM.absolute())

    path.write_text(config("/old/sealmem"), encoding="utf-8")
    refused = cli("install", "codex")
    assert refused.code == 1
    assert "--repair" in refused.err
    assert "[mcp_servers.sealmem]" not in refused.err  # no block to add by hand: it is there
    run = cli("install", "codex", "--repair")
    assert run.code == 0, run.err
    assert _doc(path)["mcp_servers"] == {"sealmem": _entry(env)}
    text = path.read_text(encoding="utf-8")
    assert text.startswith(HEAD)
    assert PROFILES in text
    if style != "dotted":  # updated where it is, the rest of its layout kept
        assert text == config(SEALMEM.absolute())

    run = cli("uninstall", "codex")
    assert run.code == 0, run.err
    assert "sealmem" not in _doc(path).get("mcp_servers", {})
    assert path.read_text(encoding="utf-8").startswith(HEAD)
    assert PROFILES in path.read_text(encoding="utf-8")


def test_invalid_toml_is_refused_with_its_line(cli: CLI, env: Env) -> None:
    broken = HEAD + "[profiles.fast\nmodel = 1\n"
    path = _config(env, broken)
    run = cli("install", "codex")
    assert run.code == 1
    assert "line 3" in run.err
    assert "Nothing was changed" in run.err
    block = run.err[run.err.index("[mcp_servers.sealmem]") :]
    assert tomllib.loads(block)["mcp_servers"]["sealmem"] == _entry(env)
    assert path.read_text(encoding="utf-8") == broken


def test_servers_that_are_not_a_table_are_refused(cli: CLI, env: Env) -> None:
    path = _config(env, 'mcp_servers = "none"\n')
    run = cli("install", "codex")
    assert run.code == 1
    assert "not a table of servers" in run.err
    assert "'mcp_servers' is a str" in run.err
    assert "make it a table ([mcp_servers.NAME] sections)" in run.err
    assert path.read_text(encoding="utf-8") == 'mcp_servers = "none"\n'
