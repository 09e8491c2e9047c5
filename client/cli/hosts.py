"""Commands that wire sealmem into agent hosts: hook, scan, watch, snippet (install and
uninstall are in :mod:`.installs`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ...protocol.errors import InputError
from . import installs, output
from .memory import JsonOpt, open_store

if TYPE_CHECKING:
    from ..hosts.transcripts import Turn

__all__ = ["register"]


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
    installs.register(app)
    app.command("hook")(hook_cmd)
    app.command("scan")(scan_cmd)
    app.command("watch")(watch_cmd)
    app.command("snippet")(snippet_cmd)
