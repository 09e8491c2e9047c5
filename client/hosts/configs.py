"""Where each agent host keeps its MCP config, and the entry sealmem adds to it.

=============  ===============================================  ==========================
host           file (``~`` is ``$HOME``)                        shape
=============  ===============================================  ==========================
claude-code    ``~/.claude.json`` (user scope)                  ``mcpServers.sealmem``
               ``~/.claude/settings.json`` (hooks)              ``hooks.<Event>[]``
codex          ``~/.codex/config.toml``                         ``[mcp_servers.sealmem]``
cursor         ``~/.cursor/mcp.json``                           ``mcpServers.sealmem``
windsurf       ``~/.codeium/windsurf/mcp_config.json``          ``mcpServers.sealmem``
=============  ===============================================  ==========================

``CLAUDE_CONFIG_DIR`` and ``CODEX_HOME`` relocate those hosts' files as the
hosts themselves do.  The server entry names the sealmem executable by its
absolute path (hosts start servers without the user's shell ``PATH``) and
carries ``SEALMEM_HOME`` only when it is set, in the ``env`` mapping every host
documents (``command`` + ``args`` + ``env``: no shell is involved).  Claude Code's
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
    "SERVER_NAME",
    "Host",
    "Platform",
    "claude_dir",
    "get_host",
    "hook_command",
    "sealmem_executable",
    "server_env",
]

SERVER_NAME = "sealmem"


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


@dataclass(frozen=True)
class Host:
    """One agent host: where its MCP config lives and how the sealmem entry looks.

    The paths are functions, resolved at call time (``HOME`` may change).
    """

    name: str
    title: str
    fmt: Literal["json", "toml"]
    config_path: Callable[[], Path]
    _detect: Callable[[], Path] | None = None
    claude: bool = False

    def detect_dir(self) -> Path:
        """The directory whose existence means the host is installed for this user."""
        return self._detect() if self._detect else self.config_path().parent

    def settings_path(self) -> Path | None:
        """Claude Code's settings file, where hooks live; None for other hosts."""
        return claude_dir() / "settings.json" if self.claude else None

    @property
    def table(self) -> str:
        """The key of the servers table at the config's root."""
        return "mcp_servers" if self.fmt == "toml" else "mcpServers"

    def entry(self, executable: Path, env: Mapping[str, str]) -> dict[str, Any]:
        """The server entry for this host, in the keys the host documents."""
        entry: dict[str, Any] = {"type": "stdio"} if self.claude else {}
        entry["command"] = str(executable)
        entry["args"] = ["mcp"]
        if env:
            entry["env"] = dict(env)
        return entry


HOSTS: dict[str, Host] = {
    "claude-code": Host("claude-code", "Claude Code", "json", _claude_json, claude_dir, True),
    "codex": Host("codex", "Codex CLI", "toml", lambda: _codex_dir() / "config.toml", _codex_dir),
    "cursor": Host("cursor", "Cursor", "json", lambda: _home() / ".cursor" / "mcp.json"),
    "windsurf": Host(
        "windsurf",
        "Windsurf",
        "json",
        lambda: _home() / ".codeium" / "windsurf" / "mcp_config.json",
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
