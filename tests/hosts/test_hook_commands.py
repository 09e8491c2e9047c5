"""Hook commands that run on POSIX and on Windows, built for either by simulation.

Claude Code's MCP entry is ``command`` + ``args`` + ``env`` (no shell); its hook
``command`` is one string, so sealmem quotes it for the platform (POSIX shell
quoting, or Windows' ``CommandLineToArgvW`` rules as ``list2cmdline`` writes
them) and passes the home as ``--home`` instead of a ``VAR=value`` shell prefix,
which cmd and PowerShell do not understand.  No Windows machine runs these
tests: the Windows strings are asserted exactly and parsed back with the
Windows rules, written out below.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path, PureWindowsPath

import pytest

from sealmem.client.hosts import claude_hooks, configs
from sealmem.client.hosts.install import plan_install
from sealmem.client.recall.api import MemoryStore
from sealmem.protocol.errors import InputError
from tests.hosts.conftest import SEALMEM, Env

WIN_EXE = PureWindowsPath(r"C:\Program Files\sealmem\Scripts\sealmem.exe")
WIN_HOME = "C:\\Users\\Ana Lopez\\sealmem home\\"  # a space, and a trailing backslash


def windows_argv(line: str) -> list[str]:
    """Split a command line as ``CommandLineToArgvW`` does (the MS C runtime rules).

    2n backslashes before a quote give n backslashes and the quote toggles
    quoting; 2n+1 give n backslashes and a literal quote; other backslashes are
    literal.  Outside quotes, spaces and tabs separate arguments.
    """
    args: list[str] = []
    current: list[str] = []
    in_quotes = have_arg = False
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            j = i
            while j < len(line) and line[j] == "\\":
                j += 1
            count = j - i
            if j < len(line) and line[j] == '"':
                current.append("\\" * (count // 2))
                if count % 2:
                    current.append('"')
                    j += 1
                i = j
            else:
                current.append("\\" * count)
                i = j
            have_arg = True
            continue
        if ch == '"':
            in_quotes = not in_quotes
            have_arg = True
        elif ch in " \t" and not in_quotes:
            if have_arg:
                args.append("".join(current))
                current, have_arg = [], False
        else:
            current.append(ch)
            have_arg = True
        i += 1
    if have_arg:
        args.append("".join(current))
    return args


def test_the_windows_hook_command_is_exact_and_parses_back() -> None:
    env = {"SEALMEM_HOME": WIN_HOME}
    line = configs.hook_command(WIN_EXE, "prompt", env, platform="windows")
    assert line == (
        r'"C:\Program Files\sealmem\Scripts\sealmem.exe" hook prompt --home '
        '"C:\\Users\\Ana Lopez\\sealmem home\\\\"'
    )
    assert "SEALMEM_HOME" not in line  # no shell prefix: cmd and PowerShell cannot set it so
    argv = [str(WIN_EXE), "hook", "prompt", "--home", WIN_HOME]
    assert windows_argv(line) == argv
    assert subprocess.list2cmdline(windows_argv(line)) == line
    plain = configs.hook_command(
        PureWindowsPath(r"C:\sm\sealmem.exe"), "stop", {}, platform="windows"
    )
    assert plain == r"C:\sm\sealmem.exe hook stop"
    assert windows_argv(plain) == [r"C:\sm\sealmem.exe", "hook", "stop"]


@pytest.mark.parametrize(
    ("exe", "home"),
    [
        ("/opt/sealmem/bin/sealmem", "/home/ana/.sealmem"),
        ("/Users/Ana Lopez/venv/bin/sealmem", "/Users/Ana Lopez/sealmem's home"),
        ("/tmp/$HOME/`id`/sealmem", '/tmp/a;b|c&d\\e"f'),
    ],
)
def test_the_posix_hook_command_round_trips_through_a_shell(exe: str, home: str) -> None:
    line = configs.hook_command(
        Path(exe), "session-start", {"SEALMEM_HOME": home}, platform="posix"
    )
    argv = [exe, "hook", "session-start", "--home", home]
    assert shlex.split(line) == argv
    echoed = subprocess.run(
        ["sh", "-c", f"set -- {line}; printf '%s\\0' \"$@\""],
        capture_output=True,
        text=True,
        check=True,
    )
    assert echoed.stdout.split("\0")[:-1] == argv


@pytest.mark.parametrize("platform", ["posix", "windows"])
def test_both_forms_and_the_old_prefix_are_recognised_as_ours(
    platform: configs.Platform,
) -> None:
    exe = WIN_EXE if platform == "windows" else Path("/a b/bin/sealmem")
    commands = {
        name: configs.hook_command(exe, name, {"SEALMEM_HOME": WIN_HOME}, platform=platform)
        for name in claude_hooks.EVENTS
    }
    old = "SEALMEM_HOME='/s t' '/a b/bin/sealmem' hook stop"
    text = claude_hooks.add_hooks(None, commands, repair=False, where="settings.json")
    assert claude_hooks.our_hooks(text, where="settings.json") == commands
    assert claude_hooks.our_hooks(
        claude_hooks.manual_hooks({"stop": old}), where="settings.json"
    ) == {"stop": old}
    assert json.loads(claude_hooks.remove_hooks(text, prune=True, where="s.json")) == {}
    assert (
        claude_hooks.our_hooks(
            claude_hooks.manual_hooks({"stop": "mysealmem hook stop --other"}), where="s.json"
        )
        == {}
    )


def test_an_old_prefix_hook_is_repaired_to_the_new_form(env: Env) -> None:
    settings = env.home / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = f"SEALMEM_HOME={shlex.quote(str(env.state))} {SEALMEM.absolute()} hook prompt"
    settings.write_text(claude_hooks.manual_hooks({"prompt": old}), encoding="utf-8")
    host = configs.get_host("claude-code")
    env_vars = {"SEALMEM_HOME": str(env.state)}
    with pytest.raises(InputError, match="--repair"):
        plan_install(host, SEALMEM.absolute(), env_vars, hooks=["prompt"], platform="posix")
    edits = plan_install(host, SEALMEM.absolute(), env_vars, repair=True, platform="windows")
    (hooks_edit,) = [e for e in edits if e.path == settings]
    assert hooks_edit.after is not None
    assert claude_hooks.our_hooks(hooks_edit.after, where="s.json") == {
        "prompt": subprocess.list2cmdline(
            [str(SEALMEM.absolute()), "hook", "prompt", "--home", str(env.state)]
        )
    }


def test_only_the_home_travels_in_a_hook_command() -> None:
    with pytest.raises(InputError, match="PATH"):
        configs.hook_command(WIN_EXE, "stop", {"PATH": "x"}, platform="windows")


def test_the_installed_hook_runs_with_home_and_no_sealmem_home(
    env: Env, store: MemoryStore
) -> None:
    """The exact command written to settings.json, run by a POSIX shell as Claude Code does."""
    store.remember("Never deploy on Fridays.", kind="warning", project="webshop")
    line = configs.hook_command(
        SEALMEM.absolute(), "session-start", {"SEALMEM_HOME": str(env.state)}
    )
    environ = {k: v for k, v in env.environ.items() if k != "SEALMEM_HOME"}
    done = subprocess.run(
        ["sh", "-c", line],
        input=json.dumps({"session_id": "s1", "cwd": str(env.project)}),
        capture_output=True,
        text=True,
        env=environ,
        cwd=env.project,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert "Never deploy on Fridays." in done.stdout
