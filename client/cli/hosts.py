"""Commands that wire sealmem into agent hosts: install, uninstall, hook, scan, watch, snippet."""

from __future__ import annotations

import threading
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ...protocol.errors import InputError
from . import output
from .memory import JsonOpt, open_store

if TYPE_CHECKING:
    from ..hosts import install
    from ..hosts.transcripts import Turn

__all__ = ["register"]

PrintOpt = Annotated[
    bool, typer.Option("--print", help="Show the changes as a diff; write nothing.")
]


def _list_hosts(as_json: bool) -> None:
    from ..hosts import configs, install  # here: tomlkit and the host editors load on use

    executable = configs.sealmem_executable()
    env = configs.server_env()
    rows = [install.host_status(h, h.entry(executable, env)) for h in configs.HOSTS.values()]
    if as_json:
        hosts = [{**asdict(s), "config": str(s.config)} for s in rows]
        output.emit_json({"executable": str(executable), "hosts": hosts})
        return
    table = [
        [
            s.host,
            "yes" if s.detected else "no",
            s.state + (" (run --repair)" if s.state == "stale" else ""),
            ",".join(s.hooks) or "-",
            str(s.config),
        ]
        for s in rows
    ]
    output.say(output.table(table, ["HOST", "DETECTED", "SEALMEM", "HOOKS", "CONFIG"]))
    output.say("\nInstall with 'sealmem install HOST'; 'sealmem install generic' prints JSON.")


def install_cmd(
    host: Annotated[
        str | None,
        typer.Argument(help="claude-code, codex, cursor, windsurf or generic; none lists hosts."),
    ] = None,
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

    if host is None:
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
    install.require_host(target, create=create)
    edits = install.plan_install(target, executable, env, repair=repair, hooks=names)
    _finish(edits, show=show, as_json=as_json, done=f"sealmem is installed in {target.title}")


def uninstall_cmd(
    host: Annotated[
        str, typer.Argument(help="claude-code, codex, cursor or windsurf (generic: nothing).")
    ],
    show: PrintOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove exactly what 'sealmem install' added to a host's config."""
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
    from ..hosts import configs, install

    target = configs.get_host(host)
    edits = install.plan_uninstall(target)
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
        verb = "removed" if edit.after is None else "updated"
        output.say(f"{verb} {edit.path} ({edit.note})")
    for backup in backups:
        output.say(f"backup: {backup}")
    output.say(done + "; restart the host for this to take effect")


def hook_cmd(
    name: Annotated[str, typer.Argument(help="session-start, prompt or stop.")],
    home: Annotated[
        Path | None, typer.Option("--home", help="The sealmem home (instead of SEALMEM_HOME).")
    ] = None,
) -> None:
    """Run a Claude Code hook (reads the hook JSON on stdin; never fails)."""
    # `sealmem hook NAME` is answered by sealmem.client.launch before typer loads; this
    # command serves `python -m sealmem.client.cli hook ...` and the in-process tests.
    from ..hosts.hooks import emit_hook_output, run_hook

    text = run_hook(name, home)
    if text:
        emit_hook_output(text)


def _scan_paths(transcripts: list[Path] | None) -> list[Path]:
    """The transcripts to scan, each checked to be a readable file before any is read."""
    from ..hosts.transcripts import find_transcripts

    if not transcripts:
        return find_transcripts()
    for path in transcripts:
        if path.is_dir():
            raise InputError(
                f"{path} is a directory, not a transcript: give its .jsonl files "
                f"(sealmem scan {path}/*.jsonl), or no path to scan every transcript"
            )
        if not path.is_file():
            raise InputError(
                f"transcript {path} does not exist: check the path, or give no path to "
                "scan every transcript under ~/.claude/projects"
            )
    return list(transcripts)


def _read_transcript(path: Path) -> list[Turn]:
    from ..hosts.transcripts import read_turns

    try:
        turns, _ = read_turns(path)
    except OSError as exc:
        raise InputError(
            f"cannot read transcript {path}: {exc.strerror or exc}; check its owner and "
            "mode (ls -l), then scan again; nothing was stored"
        ) from exc
    return turns


def scan_cmd(
    transcripts: Annotated[
        list[Path] | None,
        typer.Argument(help="Transcript files; default every ~/.claude/projects/*/*.jsonl."),
    ] = None,
    store_them: Annotated[
        bool,
        typer.Option(
            "--store",
            help="Remember the proposals, privately until 'sealmem captured accept'.",
        ),
    ] = False,
    project: Annotated[
        str | None, typer.Option("--project", help="Project to search and store in.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Propose memories from Claude Code transcripts (redacted); --store keeps them."""
    from ..hosts import capture
    from ..project import current_project

    found = []
    paths = _scan_paths(transcripts)
    with open_store() as store:
        for path in paths:
            turns = _read_transcript(path)
            where = project or current_project(
                Path(turns[0].cwd) if turns and turns[0].cwd else None
            )
            result = capture.capture(store, turns, project=where, save=store_them)
            found.append((path, where, result))
    if as_json:
        output.emit_json(
            {
                "stored": store_them,
                "transcripts": [
                    {
                        "path": str(path),
                        "project": where,
                        "duplicates": result.duplicates,
                        "proposed": [
                            {"kind": c.kind, "text": c.text, "score": c.score}
                            for c in result.proposed
                        ],
                        "stored_ids": [m.record.id for m in result.stored],
                    }
                    for path, where, result in found
                ],
            }
        )
        return
    total = 0
    for path, where, result in found:
        if not result.proposed:
            continue
        output.say(f"{path} (project {where}):")
        for candidate in result.proposed:
            output.say(f"  [{candidate.kind}] {candidate.text}")
        total += len(result.proposed)
    action = (
        "stored privately (review and share them with 'sealmem captured')"
        if store_them
        else "proposed (run with --store to keep them)"
    )
    output.say(f"{total} memories {action} from {len(found)} transcripts")


def _watch_root(root: Path | None) -> Path:
    """``--root`` if it is a directory (refused otherwise); else the host's transcript
    directory, created when the host has written none yet."""
    from ..hosts.transcripts import transcripts_root

    if root is not None:
        if not root.is_dir():
            what = "is not a directory" if root.exists() else "does not exist"
            raise InputError(
                f"--root {root} {what}: give the directory the host writes transcripts to "
                f"(default {transcripts_root()})"
            )
        return root
    where = transcripts_root()
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot create the transcript directory {where}: {exc.strerror or exc}; "
            "give an existing one with --root DIR"
        ) from exc
    if not where.is_dir():
        raise InputError(f"{where} is not a directory: give the transcript directory with --root")
    return where


def watch_cmd(
    store_them: Annotated[
        bool,
        typer.Option(
            "--store",
            help="Remember what passes the gate, privately until 'sealmem captured accept' "
            "(default: print it).",
        ),
    ] = False,
    root: Annotated[
        Path | None, typer.Option("--root", help="Transcript directory to follow.")
    ] = None,
) -> None:
    """Follow Claude Code transcripts as they grow and capture durable lessons."""
    from ..hosts import follow

    stop = threading.Event()

    def report(path: Path, candidates: list[str]) -> None:
        for text in candidates:
            output.say(f"{path.name}: {text}")

    where = _watch_root(root)
    output.say(f"following transcripts under {where} (Ctrl-C stops)", err=True)
    try:
        follow.watch(where, save=store_them, report=report, stop=stop)
    except KeyboardInterrupt:
        stop.set()


def snippet_cmd(
    flavour: Annotated[
        str, typer.Argument(help="claude (CLAUDE.md) or agents (AGENTS.md).")
    ] = "claude",
) -> None:
    """Print a short note for CLAUDE.md / AGENTS.md on when to recall and remember."""
    from ..hosts.snippet import snippet

    typer.echo(snippet(flavour), nl=False)


def register(app: typer.Typer) -> None:
    app.command("install")(install_cmd)
    app.command("uninstall")(uninstall_cmd)
    app.command("hook")(hook_cmd)
    app.command("scan")(scan_cmd)
    app.command("watch")(watch_cmd)
    app.command("snippet")(snippet_cmd)
