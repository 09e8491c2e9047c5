"""`sealmem install HOST [--scope project]` for every host, against real files.

Each host x scope installs into a temporary HOME (user scope) or the project
directory (project scope) that already holds a config with another server, is
idempotent, and uninstalls back to the exact bytes, backup included.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sealmem.client.hosts import jsonedit
from tests.hosts.conftest import SEALMEM, Env, Run

CLI = Callable[..., Run]

# host, scope, file (under HOME for user scope, under the project for project scope), table
CASES = [
    ("claude-code", "user", ".claude.json", "mcpServers"),
    ("claude-code", "project", ".mcp.json", "mcpServers"),
    ("codex", "user", ".codex/config.toml", "mcp_servers"),
    ("codex", "project", ".codex/config.toml", "mcp_servers"),
    ("cursor", "user", ".cursor/mcp.json", "mcpServers"),
    ("cursor", "project", ".cursor/mcp.json", "mcpServers"),
    ("windsurf", "user", ".codeium/windsurf/mcp_config.json", "mcpServers"),
    ("vscode", "user", ".config/Code/User/mcp.json", "servers"),
    ("vscode", "project", ".vscode/mcp.json", "servers"),
    ("gemini", "user", ".gemini/settings.json", "mcpServers"),
    ("gemini", "project", ".gemini/settings.json", "mcpServers"),
    ("zed", "user", ".config/zed/settings.json", "context_servers"),
    (
        "cline",
        "user",
        ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        "mcpServers",
    ),
    ("opencode", "user", ".config/opencode/opencode.json", "mcp"),
    ("opencode", "project", "opencode.json", "mcp"),
]
IDS = [f"{host}-{scope}" for host, scope, _, _ in CASES]
JSONC = {"vscode", "zed", "opencode"}


@pytest.fixture(autouse=True)
def _no_relocation(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("XDG_CONFIG_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)


def _existing(host: str, table: str) -> str:
    """A config the user already has: another server, and comments where the host reads
    JSONC."""
    if table == "mcp_servers":
        return '# my codex\nmodel = "o4"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    other: dict[str, Any] = (
        {"type": "local", "command": ["docs-mcp"]} if host == "opencode" else {"command": "docs"}
    )
    body = json.dumps({"theme": "dark", table: {"docs": other}}, indent=2)
    if host in JSONC:
        body = "// settings of the user\n" + body.replace('"theme"', '/* ui */ "theme"')
        body = body.replace("\n  }\n}", ",\n  }\n}")  # a trailing comma, as JSONC allows
    return body + "\n"


def _servers(path: Path, table: str) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    doc = tomllib.loads(text) if path.suffix == ".toml" else jsonedit.loads(text)
    servers: dict[str, Any] = doc[table]
    return servers


def _file(env: Env, scope: str, rel: str) -> Path:
    return (env.home if scope == "user" else env.project) / rel


def _expected(host: str, scope: str, env: Env) -> dict[str, Any]:
    command = "sealmem" if scope == "project" else str(SEALMEM.absolute())
    home = {} if scope == "project" else {"SEALMEM_HOME": str(env.state)}
    if host == "opencode":
        entry: dict[str, Any] = {"type": "local", "command": [command, "mcp"]}
        return {**entry, "environment": home} if home else entry
    entry = {"type": "stdio"} if host in ("claude-code", "vscode") else {}
    entry.update(command=command, args=["mcp"])
    return {**entry, "env": home} if home else entry


@pytest.mark.parametrize(("host", "scope", "rel", "table"), CASES, ids=IDS)
def test_every_host_and_scope_installs_and_uninstalls_exactly(
    cli: CLI, env: Env, host: str, scope: str, rel: str, table: str
) -> None:
    path = _file(env, scope, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    original = _existing(host, table).encode()
    path.write_bytes(original)

    run = cli("install", host, "--scope", scope)
    assert run.code == 0, run.err
    servers = _servers(path, table)
    assert servers["sealmem"] == _expected(host, scope, env)
    assert "docs" in servers
    text = path.read_text(encoding="utf-8")
    if host in JSONC:
        assert "// settings of the user" in text
        assert "/* ui */" in text
    backup = path.with_name(path.name + ".sealmem-backup")
    assert backup.read_bytes() == original

    again = cli("install", host, "--scope", scope)
    assert again.code == 0, again.err
    assert "nothing to change" in again.out
    assert path.read_text(encoding="utf-8") == text

    listing = cli("install", "--list", "--json").json()
    rows = listing["hosts"] if scope == "user" else listing["project"]
    row = {r["host"]: r for r in rows}[host]
    assert (row["scope"], row["state"], row["config"]) == (scope, "installed", str(path))

    gone = cli("uninstall", host, "--scope", scope)
    assert gone.code == 0, gone.err
    assert path.read_bytes() == original
    assert not backup.exists()  # it held nothing the restored file does not
    assert "removed " + backup.name in gone.out


@pytest.mark.parametrize(
    ("host", "rel", "table"),
    [(h, r, t) for h, s, r, t in CASES if s == "project"],
    ids=[h for h, s, _, _ in CASES if s == "project"],
)
def test_a_project_file_is_portable_and_created_then_removed(
    cli: CLI, env: Env, host: str, rel: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (env.project / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(env.project / "src" / "deep")
    run = cli("install", host, "--scope", "project")
    assert run.code == 0, run.err
    path = env.project / rel  # at the project root, not the working directory
    text = path.read_text(encoding="utf-8")
    for private in (str(env.home), str(env.state), str(SEALMEM.parent), "SEALMEM_HOME"):
        assert private not in text
    assert _servers(path, table)["sealmem"] == _expected(host, "project", env)
    assert not list(env.home.iterdir())  # nothing written for the user
    assert not list(path.parent.glob("*.sealmem-backup"))
    assert "commit " + rel in run.out
    assert f"does not carry SEALMEM_HOME ({env.state})" in run.err

    assert cli("uninstall", host, "--scope", "project").code == 0
    assert not path.exists()


def test_install_gemini_and_vscode_are_known_hosts(cli: CLI, env: Env) -> None:
    for host, rel, table in (
        ("gemini", ".gemini/settings.json", "mcpServers"),
        ("vscode", ".config/Code/User/mcp.json", "servers"),
    ):
        run = cli("install", host, "--create")
        assert run.code == 0, run.err
        assert "unknown host" not in run.err
        entry = _servers(env.home / rel, table)["sealmem"]
        assert entry["command"] == str(SEALMEM.absolute())


def test_jsonc_with_comments_everywhere_round_trips(cli: CLI, env: Env) -> None:
    path = env.home / ".config/zed/settings.json"
    path.parent.mkdir(parents=True)
    original = (
        b"// Zed settings\n//\n// For information on how to configure Zed, see the docs.\n"
        b"{\n"
        b'  "ui_font_size": 16, // a "quoted" word and a / slash\n'
        b'  /* "context_servers": {} was here */\n'
        b'  "buffer_font_family": "Zed // Mono",\n'
        b"}\n"
    )
    path.write_bytes(original)
    assert cli("install", "zed").code == 0
    text = path.read_text(encoding="utf-8")
    assert '"buffer_font_family": "Zed // Mono"' in text
    assert _servers(path, "context_servers")["sealmem"]["args"] == ["mcp"]
    assert cli("uninstall", "zed").code == 0
    assert path.read_bytes() == original


def test_comments_in_a_strict_json_host_are_refused(cli: CLI, env: Env) -> None:
    path = env.home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('// not JSON\n{"mcpServers": {}}\n', encoding="utf-8")
    run = cli("install", "cursor")
    assert run.code == 1
    assert "Nothing was changed" in run.err
    assert path.read_text(encoding="utf-8") == '// not JSON\n{"mcpServers": {}}\n'


def test_a_backup_is_kept_when_the_host_changed_the_file_meanwhile(cli: CLI, env: Env) -> None:
    path = env.project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{\n  "servers": {}\n}\n', encoding="utf-8")
    assert cli("install", "vscode", "--scope", "project").code == 0
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["inputs"] = []
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    assert cli("uninstall", "vscode", "--scope", "project").code == 0
    # The empty "servers" the user had stays, though the file is not the backup's any more.
    assert json.loads(path.read_text(encoding="utf-8")) == {"servers": {}, "inputs": []}
    backup = path.with_name("mcp.json.sealmem-backup")
    assert backup.read_text(encoding="utf-8") == '{\n  "servers": {}\n}\n'  # kept: it differs


def test_project_scope_refusals_name_the_fix(cli: CLI, env: Env) -> None:
    hooks = cli("install", "claude-code", "--scope", "project", "--hooks")
    assert hooks.code == 1
    assert "sealmem install claude-code --hooks" in hooks.err
    zed = cli("install", "zed", "--scope", "project")
    assert zed.code == 1
    assert "no project config file" in zed.err
    assert "sealmem install zed" in zed.err
    bad = cli("install", "cursor", "--scope", "team")
    assert bad.code == 1
    assert "--scope user or --scope project" in bad.err
    assert sorted(p.name for p in env.project.iterdir()) == [".git"]
    assert list(env.home.iterdir()) == []


def test_list_shows_every_host_scope_and_file(cli: CLI, env: Env) -> None:
    run = cli("install", "--list")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    for host, scope, rel, _ in CASES:
        path = str(_file(env, scope, rel))
        assert any(line.split()[:2] == [host, scope] and path in line for line in lines), (
            host,
            scope,
        )


def test_shell_completion_offers_hosts_and_scopes(env: Env) -> None:
    def complete(words: str) -> list[str]:
        environ = {
            **env.environ,
            "_SEALMEM_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - 1),
        }
        done = subprocess.run(
            [str(SEALMEM)], env=environ, capture_output=True, text=True, timeout=60, check=False
        )
        return done.stdout.split()

    assert complete("sealmem install c") == ["claude-code", "codex", "cursor", "cline"]
    assert complete("sealmem uninstall v") == ["vscode"]
    assert complete("sealmem install gemini --scope p") == ["project"]


@pytest.mark.parametrize(
    ("platform", "vscode", "zed"),
    [
        ("linux", ".config/Code/User/mcp.json", ".config/zed/settings.json"),
        ("darwin", "Library/Application Support/Code/User/mcp.json", ".config/zed/settings.json"),
        ("win32", "AppData/Roaming/Code/User/mcp.json", "AppData/Roaming/Zed/settings.json"),
    ],
)
def test_user_files_follow_the_platform_and_its_variables(
    env: Env, monkeypatch: pytest.MonkeyPatch, platform: str, vscode: str, zed: str
) -> None:
    from sealmem.client.hosts import configs

    monkeypatch.setattr("sys.platform", platform)
    assert configs.HOSTS["vscode"].path() == env.home / vscode
    assert configs.HOSTS["zed"].path() == env.home / zed
    cline = configs.HOSTS["cline"].path()
    assert cline.parent.parent.parent == (env.home / vscode).parent / "globalStorage"
    moved = env.home / "elsewhere"
    monkeypatch.setenv("APPDATA" if platform == "win32" else "XDG_CONFIG_HOME", str(moved))
    if platform != "darwin":
        assert configs.HOSTS["vscode"].path().is_relative_to(moved)
    if platform == "linux":
        assert configs.HOSTS["opencode"].path() == moved / "opencode" / "opencode.json"
        (moved / "opencode").mkdir(parents=True)
        (moved / "opencode" / "opencode.jsonc").write_text("{}\n", encoding="utf-8")
        assert configs.HOSTS["opencode"].path() == moved / "opencode" / "opencode.jsonc"


@pytest.mark.parametrize(("host", "scope", "rel", "table"), CASES, ids=IDS)
def test_a_broken_file_is_refused_with_the_block_to_add(
    cli: CLI, env: Env, host: str, scope: str, rel: str, table: str
) -> None:
    path = _file(env, scope, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    broken = "[mcp_servers.docs\n" if path.suffix == ".toml" else '{\n  "x": {,\n'
    path.write_text(broken, encoding="utf-8")
    run = cli("install", host, "--scope", scope)
    assert run.code == 1
    assert "Nothing was changed" in run.err
    assert table in run.err  # the block to add by hand names the host's own key
    assert path.read_text(encoding="utf-8") == broken
    assert not path.with_name(path.name + ".sealmem-backup").exists()


@pytest.mark.parametrize("host", ["claude-code", "vscode"])
@pytest.mark.parametrize(
    "broken",
    ["[" * 100_000 + "]" * 100_000, '{"x": ' + "9" * 5000 + "}"],
    ids=["nested-too-deeply", "integer-too-long"],
)
def test_a_project_file_python_cannot_parse_is_refused_with_the_block_to_add(
    cli: CLI, env: Env, host: str, broken: str
) -> None:
    """A repository's ``.mcp.json`` nested too deeply (``json.loads`` raises
    RecursionError) or holding an integer of more than 4300 digits (a ValueError that
    is no JSONDecodeError) ended the install in a crash; it is refused like any broken
    file, with the block to add by hand."""
    rel = {"claude-code": ".mcp.json", "vscode": ".vscode/mcp.json"}[host]
    path = _file(env, "project", rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(broken, encoding="utf-8")
    run = cli("install", host, "--scope", "project")
    assert run.code == 1, run
    assert "Nothing was changed" in run.err
    assert path.read_text(encoding="utf-8") == broken


def test_opencode_2_servers_shape_is_not_mixed_with_ours(cli: CLI, env: Env) -> None:
    path = env.project / "opencode.json"
    native = '{\n  "mcp": {\n    "servers": {\n      "docs": {"type": "local"}\n    }\n  }\n}\n'
    path.write_text(native, encoding="utf-8")
    run = cli("install", "opencode", "--scope", "project")
    assert run.code == 1
    assert "mcp.servers" in run.err
    assert '"sealmem"' in run.err  # the entry to add by hand
    assert path.read_text(encoding="utf-8") == native


def test_a_committed_project_file_without_a_backup_uninstalls(cli: CLI, env: Env) -> None:
    """A teammate's clone: the project file holds sealmem (and comments) but no backup."""
    path = env.project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    entry = json.dumps({"type": "stdio", "command": "sealmem", "args": ["mcp"]})
    path.write_text(
        '{\n  // shared servers\n  "servers": {\n    "docs": {"command": "docs"},\n'
        f'    "sealmem": {entry},\n  }},\n}}\n',
        encoding="utf-8",
    )
    status = {r["host"]: r for r in cli("install", "--list", "--json").json()["project"]}
    assert status["vscode"]["state"] == "installed"
    run = cli("uninstall", "vscode", "--scope", "project")
    assert run.code == 0, run.err
    text = path.read_text(encoding="utf-8")
    assert "// shared servers" in text
    assert list(jsonedit.loads(text)["servers"]) == ["docs"]


@pytest.mark.parametrize("servers", ["5", '"sealmem"', "[1]", "null"])
def test_uninstall_of_a_file_whose_servers_are_not_a_table_changes_nothing(
    cli: CLI, env: Env, servers: str
) -> None:
    path = env.project / ".mcp.json"
    text = '{"mcpServers": ' + servers + "}\n"
    path.write_text(text, encoding="utf-8")
    run = cli("uninstall", "claude-code", "--scope", "project")
    assert run.code == 0, run.err
    assert "nothing to change" in run.out
    assert path.read_text(encoding="utf-8") == text


def test_project_scope_in_the_home_directory_is_refused(
    cli: CLI, env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(env.home)  # no git repository above: the project would be HOME
    run = cli("install", "cursor", "--scope", "project")
    assert run.code == 1
    assert "user config, not a project's" in run.err
    assert list(env.home.iterdir()) == []
    listing = cli("install", "--list", "--json")
    assert listing.code == 0, listing.err
    assert "cursor" not in {row["host"] for row in listing.json()["project"]}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            '{"a": "x // not \\" /* c */", /* c "q" */ "b": [1, 2,],}',
            {"a": 'x // not " /* c */', "b": [1, 2]},
        ),
        ('// head "quote\n{\n "u": "https://x.org/a,b]",\n}\n', {"u": "https://x.org/a,b]"}),
        ('{"d": "\\\\", // c\n "e": "/"}', {"d": "\\", "e": "/"}),
    ],
)
def test_jsonc_blanking_keeps_every_position(text: str, value: dict[str, Any]) -> None:
    blanked = jsonedit.blank_jsonc(text)
    assert len(blanked) == len(text)
    assert blanked.count("\n") == text.count("\n")
    assert json.loads(blanked) == value
    assert jsonedit.blank_jsonc('{"plain": ["json", 1]}') == '{"plain": ["json", 1]}'
