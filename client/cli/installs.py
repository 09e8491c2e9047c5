"""Commands that write sealmem into agent hosts' configs: install and uninstall."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ...protocol.errors import InputError
from . import output
from .memory import JsonOpt

if TYPE_CHECKING:
    from ..hosts import configs, install

__all__ = ["register"]

PrintOpt = Annotated[
    bool, typer.Option("--print", help="Show the changes as a diff; write nothing.")
]


def _complete_host(incomplete: str) -> list[str]:
    from ..hosts import configs

    return [name for name in [*configs.HOSTS, "generic"] if name.startswith(incomplete)]


def _complete_scope(incomplete: str) -> list[str]:
    return [name for name in ("user", "project") if name.startswith(incomplete)]


ScopeOpt = Annotated[
    str,
    typer.Option(
        "--scope",
        metavar="user|project",
        autocompletion=_complete_scope,
        help="user: your own config (default); project: the vendor's project file in this "
        "project, to commit (plain 'sealmem mcp', no path or home).",
    ),
]


def _scope(value: str) -> configs.Scope:

    if value not in ("user", "project"):
        raise InputError(f"unknown scope {value!r}: use --scope user or --scope project")
    return "project" if value == "project" else "user"


def _list_hosts(as_json: bool) -> None:
    from ..hosts import configs, install  # here: tomlkit and the host editors load on use

    executable = configs.sealmem_executable()
    env = configs.server_env()
    root = install.project_root()
    rows = [install.host_status(h, h.entry(executable, env)) for h in configs.HOSTS.values()]
    project = []
    for h in configs.HOSTS.values():
        try:
            project.append(install.host_status(h, h.project_entry(), "project", root))
        except InputError:  # no project file, or it would be the user's own (run in HOME)
            continue
    if as_json:
        output.emit_json(
            {
                "executable": str(executable),
                "project_root": str(root),
                "hosts": [{**asdict(s), "config": str(s.config)} for s in rows],
                "project": [{**asdict(s), "config": str(s.config)} for s in project],
            }
        )
        return
    table = [
        [
            s.host,
            s.scope,
            "yes" if s.detected else "no",
            s.state + (" (run --repair)" if s.state == "stale" else ""),
            ",".join(s.hooks) or "-",
            str(s.config),
        ]
        for s in sorted(rows + project, key=lambda s: (list(configs.HOSTS).index(s.host), s.scope))
    ]
    headers = ["HOST", "SCOPE", "FOUND", "SEALMEM", "HOOKS", "FILE"]
    output.say(output.table(table, headers))
    output.say(
        "\nInstall with 'sealmem install HOST [--scope project]'; 'sealmem install generic' "
        "prints JSON."
    )


def install_cmd(
    host: Annotated[
        str | None,
        typer.Argument(
            help="claude-code, codex, cursor, windsurf, vscode, gemini, zed, cline, opencode "
            "or generic; none lists hosts.",
            autocompletion=_complete_host,
        ),
    ] = None,
    scope: ScopeOpt = "user",
    listing: Annotated[
        bool, typer.Option("--list", help="List every host, scope and file, and sealmem's state.")
    ] = False,
    show: PrintOpt = False,
    repair: Annotated[
        bool, typer.Option("--repair", help="Update an entry that points to another sealmem.")
    ] = False,
    hooks: Annotated[
        bool,
        typer.Option(
            "--hooks", help="Claude Code: add the SessionStart context and Stop capture hooks."
        ),
    ] = False,
    auto_recall: Annotated[
        bool,
        typer.Option(
            "--auto-recall", help="Claude Code: recall on every prompt (UserPromptSubmit)."
        ),
    ] = False,
    create: Annotated[
        bool,
        typer.Option(
            "--create", help="Write the config even if the host's directory does not exist."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Add the sealmem MCP server to an agent host's config (one backup kept per file)."""
    from ..hosts import configs, install

    where = _scope(scope)
    if host is None or listing:
        _list_hosts(as_json)
        return
    executable = configs.sealmem_executable()
    env = configs.server_env()
    if host == "generic":
        typer.echo(install.generic_snippet(configs.HOSTS["cursor"].entry(executable, env)))
        return
    target = configs.get_host(host)
    names = (["session-start", "stop"] if hooks else []) + (["prompt"] if auto_recall else [])
    if names and target.settings_path() is None:
        raise install.ConfigRefusedError(
            f"--hooks and --auto-recall are for claude-code, not {host}"
        )
    root = install.project_root() if where == "project" else None
    if where == "user":
        install.require_host(target, create=create)
    edits = install.plan_install(
        target, executable, env, repair=repair, hooks=names, scope=where, project=root
    )
    done = f"sealmem is installed in {target.title}" + (
        f" for the project {root} (commit {target.path(where, root).relative_to(root)})"
        if root
        else ""
    )
    _finish(edits, show=show, as_json=as_json, done=done)
    if root and not show:
        _project_notes(env)


def _project_notes(env: dict[str, str]) -> None:
    """What a portable project entry does not carry, said once on stderr."""
    import shutil

    if env:
        output.say(
            f"note: the project file does not carry SEALMEM_HOME ({env['SEALMEM_HOME']}); "
            "the host uses the default home unless SEALMEM_HOME is set where it starts",
            err=True,
        )
    if shutil.which("sealmem") is None:
        output.say(
            "note: 'sealmem' is not on PATH, where the host looks for it: install sealmem "
            "with pipx, or put the directory of this sealmem on PATH",
            err=True,
        )


def uninstall_cmd(
    host: Annotated[
        str,
        typer.Argument(
            help="A host 'sealmem install' wrote to (generic: nothing to remove).",
            autocompletion=_complete_host,
        ),
    ],
    scope: ScopeOpt = "user",
    show: PrintOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove exactly what 'sealmem install' added to a host's config."""
    where = _scope(scope)
    if host == "generic":
        # 'install generic' only prints a snippet: there is nothing of ours to take out.
        message = (
            "nothing to uninstall for generic: 'sealmem install generic' only prints a "
            "snippet and writes no file; remove the 'sealmem' entry from the config you "
            "pasted it into"
        )
        if as_json:
            output.emit_json({"changed": [], "written": False, "backups": [], "note": message})
        else:
            output.say(message)
        return
    from ..hosts import configs, install, uninstall

    target = configs.get_host(host)
    root = install.project_root() if where == "project" else None
    edits = uninstall.plan_uninstall(target, where, root)
    _finish(edits, show=show, as_json=as_json, done=f"sealmem is not in {target.title}")


def _finish(edits: list[install.FileEdit], *, show: bool, as_json: bool, done: str) -> None:
    from ..hosts import install

    backups: list[Path] = []
    if edits and not show:
        backups = install.apply_edits(edits)
    if as_json:
        output.emit_json(
            {
                "changed": [str(e.path) for e in edits],
                "written": not show,
                "backups": [str(b) for b in backups],
                "diff": install.render_diff(edits),
            }
        )
        return
    if show:
        output.say(install.render_diff(edits) or "nothing to change", nl=not edits)
        return
    if not edits:
        output.say(f"{done}; nothing to change")
        return
    for edit in edits:
        verb = "removed" if edit.after is None else "created" if edit.before is None else "updated"
        output.say(f"{verb} {edit.path} ({edit.note})")
    for backup in backups:
        output.say(f"backup: {backup}")
    for edit in edits:
        if edit.drop_backup:
            output.say(f"removed {edit.path.name}{install.BACKUP_SUFFIX} (the file is as it was)")
    output.say(done + "; restart the host for this to take effect")


def register(app: typer.Typer) -> None:
    app.command("install")(install_cmd)
    app.command("uninstall")(uninstall_cmd)
