"""Where each agent host keeps its MCP config, and the entry sealmem adds to it.

Each host's row in :data:`HOSTS` cites the vendor page it was checked against.

- claude-code: ``~/.claude.json``, project ``.mcp.json``: ``mcpServers``
  (hooks in ``~/.claude/settings.json``)
- codex: ``~/.codex/config.toml``, project ``.codex/config.toml``: ``[mcp_servers]``
- cursor: ``~/.cursor/mcp.json``, project ``.cursor/mcp.json``: ``mcpServers``
- windsurf: ``~/.codeium/windsurf/mcp_config.json``: ``mcpServers``
- vscode: ``<VS Code user dir>/mcp.json``, project ``.vscode/mcp.json``: ``servers``
- gemini: ``~/.gemini/settings.json``, project ``.gemini/settings.json``: ``mcpServers``
- zed: ``~/.config/zed/settings.json``: ``context_servers``
- cline: ``<VS Code user dir>/globalStorage/saoudrizwan.claude-dev/settings/``
  ``cline_mcp_settings.json``: ``mcpServers``
- opencode: ``~/.config/opencode/opencode.json``, project ``opencode.json``: ``mcp``

``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``XDG_CONFIG_HOME`` and ``APPDATA`` relocate
those files as the hosts themselves do.  A user-scope entry names the sealmem
executable by its absolute path (hosts start servers without the user's shell
``PATH``) and carries ``SEALMEM_HOME`` only when it is set, in the ``env`` mapping
the host documents (``command`` + ``args`` + ``env``: no shell is involved).  A
project-scope entry is committed with the project, so it is portable: the plain
command ``sealmem`` with its arguments, no path, no home, no token.  Claude Code's
hooks are one command string: :func:`hook_command` quotes it for the platform and
passes the home as ``--home``, so no shell syntax to set a variable is needed.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Literal

from ...protocol.errors import InputError

__all__ = [
    "HOSTS",
    "PROJECT_COMMAND",
    "SERVER_NAME",
    "Host",
    "Platform",
    "Scope",
    "claude_dir",
    "get_host",
    "hook_command",
    "sealmem_executable",
    "server_env",
]

SERVER_NAME = "sealmem"
PROJECT_COMMAND = "sealmem"  # what a committed project file runs: found on PATH

Scope = Literal["user", "project"]
Style = Literal["plain", "typed", "opencode"]


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _env_dir(variable: str, default: str) -> Path:
    custom = os.environ.get(variable)
    return Path(custom) if custom else _home() / default


def claude_dir() -> Path:
    return _env_dir("CLAUDE_CONFIG_DIR", ".claude")


def _claude_json() -> Path:
    custom = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(custom) / ".claude.json" if custom else _home() / ".claude.json"


def _codex_dir() -> Path:
    return _env_dir("CODEX_HOME", ".codex")


def _xdg_config() -> Path:
    """``$XDG_CONFIG_HOME`` or ``~/.config``, where Zed and OpenCode keep their settings."""
    return _env_dir("XDG_CONFIG_HOME", ".config")


def _appdata() -> Path:
    return _env_dir("APPDATA", "AppData/Roaming")


def _vscode_user() -> Path:
    """VS Code's user directory (https://code.visualstudio.com/docs/configure/settings,
    "Settings file locations")."""
    if sys.platform == "win32":
        return _appdata() / "Code" / "User"
    if sys.platform == "darwin":
        return _home() / "Library" / "Application Support" / "Code" / "User"
    return _xdg_config() / "Code" / "User"


def _zed_settings() -> Path:
    if sys.platform == "win32":
        return _appdata() / "Zed" / "settings.json"
    return _xdg_config() / "zed" / "settings.json"


def _cline_dir() -> Path:
    return _vscode_user() / "globalStorage" / "saoudrizwan.claude-dev"


def _opencode_config() -> Path:
    """``opencode.json``, or ``opencode.jsonc`` when that is the one the user has."""
    folder = _xdg_config() / "opencode"
    plain, commented = folder / "opencode.json", folder / "opencode.jsonc"
    return commented if commented.exists() and not plain.exists() else plain


@dataclass(frozen=True)
class Host:
    """One agent host: where its MCP config lives and how the sealmem entry looks.

    The paths are functions, resolved at call time (``HOME`` may change).
    ``project_file`` is the documented project file (relative to the project
    root), None when the vendor documents none.  ``jsonc``: the host reads
    comments and trailing commas in this file, so sealmem accepts them too.
    """

    name: str
    title: str
    fmt: Literal["json", "toml"]
    config_path: Callable[[], Path]
    table: str = "mcpServers"
    style: Style = "plain"
    project_file: str | None = None
    jsonc: bool = False
    docs: str = ""
    _detect: Callable[[], Path] | None = None
    claude: bool = False

    def detect_dir(self) -> Path:
        """The directory whose existence means the host is installed for this user."""
        return self._detect() if self._detect else self.config_path().parent

    def path(self, scope: Scope = "user", project: Path | None = None) -> Path:
        """The config file for ``scope``; ``project`` is the project root."""
        if scope == "user":
            return self.config_path()
        if self.project_file is None:
            raise InputError(
                f"{self.title} documents no project config file; install it for your "
                f"user instead: sealmem install {self.name}"
            )
        path = (project or Path.cwd()) / self.project_file
        if path.absolute() == self.config_path().absolute():
            raise InputError(
                f"{path} is {self.title}'s user config, not a project's: run 'sealmem install "
                f"{self.name} --scope project' inside the project (its git repository)"
            )
        return path

    def settings_path(self) -> Path | None:
        """Claude Code's settings file, where hooks live; None for other hosts."""
        return claude_dir() / "settings.json" if self.claude else None

    def entry(self, executable: PurePath | str, env: Mapping[str, str]) -> dict[str, Any]:
        """The server entry for this host, in the keys the host documents."""
        if self.style == "opencode":
            entry: dict[str, Any] = {"type": "local", "command": [str(executable), "mcp"]}
            if env:
                entry["environment"] = dict(env)
            return entry
        entry = {"type": "stdio"} if self.style == "typed" else {}
        entry["command"] = str(executable)
        entry["args"] = ["mcp"]
        if env:
            entry["env"] = dict(env)
        return entry

    def shape_problem(self, servers: object) -> str | None:
        """Why the servers table found in the file is not one sealmem can add to."""
        if not isinstance(servers, dict):
            return f"'{self.table}' is not a table of servers"
        if self.style == "opencode" and isinstance(servers.get("servers"), dict):
            # OpenCode 2's own shape, mcp.servers.NAME (https://opencode.ai/docs/mcp-servers/):
            # an entry beside it would mix the two shapes.
            return "'mcp.servers' is OpenCode 2's shape; add sealmem under it by hand"
        return None

    def project_entry(self) -> dict[str, Any]:
        """The portable entry a committed project file gets: ``sealmem mcp``, nothing else."""
        return self.entry(PROJECT_COMMAND, {})


def _json(name: str, title: str, path: Callable[[], Path], docs: str, **kw: Any) -> Host:
    return Host(name, title, "json", path, docs=docs, **kw)


HOSTS: dict[str, Host] = {
    # https://code.claude.com/docs/en/mcp (user scope ~/.claude.json, project .mcp.json)
    "claude-code": _json(
        "claude-code",
        "Claude Code",
        _claude_json,
        "https://code.claude.com/docs/en/mcp",
        style="typed",
        project_file=".mcp.json",
        _detect=claude_dir,
        claude=True,
    ),
    # https://developers.openai.com/codex/mcp ([mcp_servers.NAME]; .codex/config.toml in a
    # trusted project)
    "codex": Host(
        "codex",
        "Codex CLI",
        "toml",
        lambda: _codex_dir() / "config.toml",
        table="mcp_servers",
        project_file=".codex/config.toml",
        docs="https://developers.openai.com/codex/mcp",
        _detect=_codex_dir,
    ),
    # https://cursor.com/docs/mcp (~/.cursor/mcp.json, project .cursor/mcp.json)
    "cursor": _json(
        "cursor",
        "Cursor",
        lambda: _home() / ".cursor" / "mcp.json",
        "https://cursor.com/docs/mcp",
        project_file=".cursor/mcp.json",
    ),
    # https://docs.windsurf.com/windsurf/cascade/mcp (user file only)
    "windsurf": _json(
        "windsurf",
        "Windsurf",
        lambda: _home() / ".codeium" / "windsurf" / "mcp_config.json",
        "https://docs.windsurf.com/windsurf/cascade/mcp",
    ),
    # https://code.visualstudio.com/docs/copilot/reference/mcp-configuration (mcp.json in
    # the user profile or .vscode/mcp.json; top-level "servers"; JSONC)
    "vscode": _json(
        "vscode",
        "VS Code (Copilot agent mode)",
        lambda: _vscode_user() / "mcp.json",
        "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
        table="servers",
        style="typed",
        project_file=".vscode/mcp.json",
        jsonc=True,
    ),
    # https://geminicli.com/docs/tools/mcp-server/ and /docs/cli/configuration
    # (~/.gemini/settings.json, project .gemini/settings.json, "mcpServers")
    "gemini": _json(
        "gemini",
        "Gemini CLI",
        lambda: _home() / ".gemini" / "settings.json",
        "https://geminicli.com/docs/tools/mcp-server/",
        project_file=".gemini/settings.json",
    ),
    # https://zed.dev/docs/ai/mcp ("context_servers" in the settings file, JSONC)
    "zed": _json(
        "zed",
        "Zed",
        _zed_settings,
        "https://zed.dev/docs/ai/mcp",
        table="context_servers",
        jsonc=True,
    ),
    # https://docs.cline.bot/mcp/configuring-mcp-servers (cline_mcp_settings.json,
    # "mcpServers"; the VS Code extension keeps it in its globalStorage)
    "cline": _json(
        "cline",
        "Cline",
        lambda: _cline_dir() / "settings" / "cline_mcp_settings.json",
        "https://docs.cline.bot/mcp/configuring-mcp-servers",
        _detect=_cline_dir,
    ),
    # https://opencode.ai/docs/mcp-servers/ ("mcp": {NAME: {"type": "local", "command":
    # [...], "environment": {...}}}); https://opencode.ai/docs/migrate-v1/ keeps it valid
    "opencode": _json(
        "opencode",
        "OpenCode",
        _opencode_config,
        "https://opencode.ai/docs/mcp-servers/",
        table="mcp",
        style="opencode",
        project_file="opencode.json",
        jsonc=True,
    ),
}


def get_host(name: str) -> Host:
    try:
        return HOSTS[name]
    except KeyError:
        known = ", ".join([*HOSTS, "generic"])
        raise InputError(f"unknown host {name!r}; choose one of: {known}") from None


def server_env() -> dict[str, str]:
    """Environment the server needs: ``SEALMEM_HOME`` (absolute) only when it is set."""
    home = os.environ.get("SEALMEM_HOME")
    return {"SEALMEM_HOME": str(Path(home).expanduser().absolute())} if home else {}


def sealmem_executable() -> Path:
    """Absolute path of the ``sealmem`` console script that is running or installed.

    Tried in order: the program being run (``sys.argv[0]``) when it is the
    sealmem script, the script beside this interpreter (a virtualenv's bin),
    then ``PATH``.
    """
    script = "sealmem.exe" if os.name == "nt" else "sealmem"
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    candidates: list[Path] = []
    if argv0 is not None and argv0.name in (script, "sealmem"):
        candidates.append(argv0)
    scripts_dir = "Scripts" if os.name == "nt" else "bin"
    candidates.append(Path(sys.prefix) / scripts_dir / script)
    candidates.append(Path(sys.executable).parent / script)
    found = shutil.which("sealmem")
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.absolute()
    raise InputError(
        "cannot find the installed 'sealmem' executable (looked beside "
        f"{sys.executable} and on PATH); install sealmem with pip or pipx and retry"
    )


Platform = Literal["posix", "windows"]


def hook_command(
    executable: PurePath | str,
    event: str,
    env: Mapping[str, str],
    *,
    platform: Platform | None = None,
) -> str:
    """The command line a Claude Code hook runs (its ``command`` is one string):
    ``/abs/sealmem hook EVENT [--home DIR]``.

    ``SEALMEM_HOME`` goes as ``--home`` (no shell syntax to set a variable, which
    differs between sh, cmd and PowerShell); it is the only variable sealmem sets.
    Quoted for the platform's rules: POSIX shell quoting, or Windows' (the
    rules of ``CommandLineToArgvW``, as :func:`subprocess.list2cmdline` writes them).
    """
    unknown = sorted(set(env) - {"SEALMEM_HOME"})
    if unknown:
        raise InputError(f"a hook command cannot carry {', '.join(unknown)}; only SEALMEM_HOME")
    home = env.get("SEALMEM_HOME")
    argv = [str(executable), "hook", event, *(["--home", home] if home else [])]
    if (platform or ("windows" if os.name == "nt" else "posix")) == "windows":
        return subprocess.list2cmdline(argv)
    return shlex.join(argv)
