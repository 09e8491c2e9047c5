"""`sealmem install` / `uninstall` against real config files in a temporary HOME."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.conftest import FIXTURES, SEALMEM, Env, Run

CLI = Callable[..., Run]

# host, config path under HOME, fixture file holding a realistic existing config, other server
HOSTS = [
    ("claude-code", ".claude.json", "claude.json", "github"),
    ("codex", ".codex/config.toml", "codex_config.toml", "docs"),
    ("cursor", ".cursor/mcp.json", "cursor_mcp.json", "postgres"),
    ("windsurf", ".codeium/windsurf/mcp_config.json", "windsurf_mcp_config.json", "filesystem"),
]
BROKEN = {"json": '{\n  "mcpServers": {\n    "x": {,\n', "toml": "[mcp_servers.docs\ncommand = \n"}


def _parse(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


def _servers(path: Path) -> dict[str, Any]:
    doc = _parse(path)
    return doc.get("mcp_servers" if path.suffix == ".toml" else "mcpServers", {})


def _place(env: Env, rel: str, fixture: str) -> tuple[Path, bytes]:
    path = env.home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / fixture, path)
    return path, path.read_bytes()


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".sealmem-backup*"))


@pytest.mark.slow
@pytest.mark.parametrize(("host", "rel", "fixture", "other"), HOSTS, ids=[h[0] for h in HOSTS])
def test_install_merges_backs_up_and_uninstall_restores_bytes(
    cli: CLI, env: Env, host: str, rel: str, fixture: str, other: str
) -> None:
    path, original = _place(env, rel, fixture)
    before = _parse(path)

    run = cli("install", host)
    assert run.code == 0, run.err
    servers = _servers(path)
    entry = servers["sealmem"]
    assert other in servers
    assert servers[other] == _servers(FIXTURES / fixture)[other]
    assert Path(entry["command"]).is_absolute()
    assert Path(entry["command"]) == SEALMEM.absolute()
    assert entry["args"] == ["mcp"]
    assert entry["env"] == {"SEALMEM_HOME": str(env.state)}
    # Everything but our one entry is as it was.
    after = _parse(path)
    key = "mcp_servers" if path.suffix == ".toml" else "mcpServers"
    del after[key]["sealmem"]
    assert after == before
    (backup,) = _backups(path)
    assert backup.read_bytes() == original

    again = cli("install", host)
    assert again.code == 0
    assert "nothing to change" in again.out
    assert len(_backups(path)) == 1

    run = cli("uninstall", host)
    assert run.code == 0, run.err
    assert path.read_bytes() == original


@pytest.mark.parametrize(("host", "rel", "fixture", "other"), HOSTS, ids=[h[0] for h in HOSTS])
def test_print_writes_nothing(
    cli: CLI, env: Env, host: str, rel: str, fixture: str, other: str
) -> None:
    path, original = _place(env, rel, fixture)
    run = cli("install", host, "--print")
    assert run.code == 0
    assert "+" in run.out
    assert "sealmem" in run.out
    assert str(SEALMEM.absolute()) in run.out
    assert path.read_bytes() == original
    assert _backups(path) == []


@pytest.mark.parametrize(("host", "rel", "fixture", "other"), HOSTS, ids=[h[0] for h in HOSTS])
def test_unparseable_config_is_left_untouched(
    cli: CLI, env: Env, host: str, rel: str, fixture: str, other: str
) -> None:
    path = env.home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    broken = BROKEN["toml" if path.suffix == ".toml" else "json"]
    path.write_text(broken, encoding="utf-8")
    run = cli("install", host)
    assert run.code == 1
    assert "Nothing was changed" in run.err
    assert str(SEALMEM.absolute()) in run.err  # the block to add by hand
    assert path.read_text(encoding="utf-8") == broken
    assert _backups(path) == []


@pytest.mark.slow
@pytest.mark.parametrize(("host", "rel", "fixture", "other"), HOSTS, ids=[h[0] for h in HOSTS])
def test_repair_fixes_a_stale_path(
    cli: CLI, env: Env, host: str, rel: str, fixture: str, other: str
) -> None:
    path, _ = _place(env, rel, fixture)
    assert cli("install", host).code == 0
    stale = path.read_text(encoding="utf-8").replace(str(SEALMEM.absolute()), "/gone/bin/sealmem")
    path.write_text(stale, encoding="utf-8")

    refused = cli("install", host)
    assert refused.code == 1
    assert "--repair" in refused.err
    assert path.read_text(encoding="utf-8") == stale
    listing = cli("install", "--json").json()
    assert {h["host"]: h["state"] for h in listing["hosts"]}[host] == "stale"

    run = cli("install", host, "--repair")
    assert run.code == 0, run.err
    servers = _servers(path)
    assert servers["sealmem"]["command"] == str(SEALMEM.absolute())
    assert other in servers
    assert "/gone/" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(("host", "rel", "fixture", "other"), HOSTS, ids=[h[0] for h in HOSTS])
def test_install_into_missing_config_and_uninstall_removes_the_file(
    cli: CLI, env: Env, host: str, rel: str, fixture: str, other: str
) -> None:
    path = env.home / rel
    assert cli("install", host, "--create").code == 0
    assert _servers(path)["sealmem"]["command"] == str(SEALMEM.absolute())
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert cli("uninstall", host).code == 0
    assert not path.exists()


def test_uninstall_keeps_changes_the_host_made_meanwhile(cli: CLI, env: Env) -> None:
    path, _ = _place(env, ".claude.json", "claude.json")
    before = _parse(path)
    assert cli("install", "claude-code").code == 0
    # Claude Code rewrites its file while running: simulate it adding a key.
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["numStartups"] = 43
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    assert cli("uninstall", "claude-code").code == 0
    assert _parse(path) == {**before, "numStartups": 43}


def test_an_empty_servers_table_the_user_had_survives_uninstall(cli: CLI, env: Env) -> None:
    path = env.home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    original = b'{\n  "mcpServers": {}\n}\n'
    path.write_bytes(original)
    assert cli("install", "cursor").code == 0
    assert cli("uninstall", "cursor").code == 0
    assert path.read_bytes() == original


def test_claude_hooks_are_added_beside_the_users_and_removed_exactly(cli: CLI, env: Env) -> None:
    settings, original = _place(env, ".claude/settings.json", "claude_settings.json")
    run = cli("install", "claude-code", "--hooks", "--auto-recall")
    assert run.code == 0, run.err
    hooks = _parse(settings)["hooks"]
    exe = str(SEALMEM.absolute())
    ours = {
        event: [h["command"] for g in groups for h in g["hooks"] if exe in h["command"]]
        for event, groups in hooks.items()
    }
    assert ours["SessionStart"] == [f"{exe} hook session-start --home {env.state}"]
    assert ours["UserPromptSubmit"] == [f"{exe} hook prompt --home {env.state}"]
    assert ours["Stop"] == [f"{exe} hook stop --home {env.state}"]
    assert ours["PostToolUse"] == []
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == "cat ~/notes/today.md"
    status = {h["host"]: h for h in cli("install", "--json").json()["hosts"]}["claude-code"]
    assert status["hooks"] == ["prompt", "session-start", "stop"]

    # A moved installation: the stale hook is refused, then repaired.
    settings.write_text(settings.read_text().replace(exe, "/old/sealmem"), encoding="utf-8")
    assert cli("install", "claude-code", "--hooks").code == 1
    assert cli("install", "claude-code", "--repair").code == 0
    assert "/old/sealmem" not in settings.read_text()

    assert cli("uninstall", "claude-code").code == 0
    assert settings.read_bytes() == original
    assert not (env.home / ".claude.json").exists()


def test_hooks_only_for_claude_code(cli: CLI, env: Env) -> None:
    run = cli("install", "cursor", "--hooks")
    assert run.code == 1
    assert "claude-code" in run.err
    assert not (env.home / ".cursor").exists()


def test_listing_shows_detected_hosts(cli: CLI, env: Env) -> None:
    (env.home / ".cursor").mkdir()
    (env.home / ".codex").mkdir()
    assert cli("install", "codex").code == 0
    listing = cli("install", "--json").json()
    assert listing["executable"] == str(SEALMEM.absolute())
    hosts = {h["host"]: h for h in listing["hosts"]}
    assert hosts["cursor"]["detected"]
    assert hosts["cursor"]["state"] == "absent"
    assert hosts["codex"]["detected"]
    assert hosts["codex"]["state"] == "installed"
    assert not hosts["windsurf"]["detected"]
    text = cli("install")
    assert "codex" in text.out
    assert "installed" in text.out


def test_generic_prints_a_snippet_and_writes_nothing(cli: CLI, env: Env) -> None:
    run = cli("install", "generic")
    assert run.code == 0
    entry = json.loads(run.out)["mcpServers"]["sealmem"]
    assert entry == {
        "command": str(SEALMEM.absolute()),
        "args": ["mcp"],
        "env": {"SEALMEM_HOME": str(env.state)},
    }
    assert list(env.home.iterdir()) == []


def test_no_env_when_sealmem_home_is_unset(
    cli: CLI, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEALMEM_HOME")
    assert cli("install", "windsurf", "--create").code == 0
    entry = _servers(env.home / ".codeium/windsurf/mcp_config.json")["sealmem"]
    assert "env" not in entry


def test_unknown_host_is_refused(cli: CLI) -> None:
    run = cli("install", "notepad")
    assert run.code == 1
    assert (
        "claude-code, codex, cursor, windsurf, vscode, gemini, zed, cline, opencode, generic"
        in run.err
    )


def test_relocated_host_dirs_are_respected(
    cli: CLI, env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-dir"))
    assert cli("install", "codex", "--create").code == 0
    assert cli("install", "claude-code", "--hooks", "--create").code == 0
    assert "sealmem" in _servers(tmp_path / "codex-home" / "config.toml")
    assert "sealmem" in _servers(tmp_path / "claude-dir" / ".claude.json")
    assert "Stop" in _parse(tmp_path / "claude-dir" / "settings.json")["hooks"]
    assert not (env.home / ".codex").exists()
    assert not (env.home / ".claude.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize(("host", "rel", "fixture", "other"), HOSTS, ids=[h[0] for h in HOSTS])
def test_install_into_an_absent_host_is_refused_without_create(
    cli: CLI, env: Env, host: str, rel: str, fixture: str, other: str
) -> None:
    for args in ((), ("--print",)):
        run = cli("install", host, *args)
        assert run.code == 1
        assert f"sealmem install {host} --create" in run.err
        assert "nothing was changed" in run.err
    assert list(env.home.iterdir()) == []
    assert cli("install", host, "--create").code == 0
    assert "sealmem" in _servers(env.home / rel)


def test_one_backup_per_config_file_holds_the_users_own_config(cli: CLI, env: Env) -> None:
    config, original = _place(env, ".claude.json", "claude.json")
    settings, original_settings = _place(env, ".claude/settings.json", "claude_settings.json")
    assert cli("install", "claude-code").code == 0
    assert cli("install", "claude-code", "--auto-recall").code == 0
    assert cli("install", "claude-code", "--hooks").code == 0
    assert _backups(config) == [config.with_name(".claude.json.sealmem-backup")]
    assert _backups(config)[0].read_bytes() == original  # the user's file, not ours
    assert _backups(settings) == [settings.with_name("settings.json.sealmem-backup")]
    assert _backups(settings)[0].read_bytes() == original_settings
    assert cli("uninstall", "claude-code").code == 0
    assert (config.read_bytes(), settings.read_bytes()) == (original, original_settings)
    # Both files are as they were: their backups hold nothing more, so they are gone.
    assert _backups(config) == _backups(settings) == []
    # A later install onto the user's changed (clean) file refreshes the backup.
    config.write_text(config.read_text(encoding="utf-8").replace("github", "gh"), "utf-8")
    changed = config.read_bytes()
    assert cli("install", "claude-code").code == 0
    assert _backups(config)[0].read_bytes() == changed


def test_uninstall_generic_says_there_is_nothing_to_remove(cli: CLI, env: Env) -> None:
    run = cli("uninstall", "generic")
    assert run.code == 0, run.err
    assert "nothing to uninstall for generic" in run.out
    assert "unknown host" not in run.out + run.err
    assert list(env.home.iterdir()) == []
