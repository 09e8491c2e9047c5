"""Commands that move memories in and out: ``export`` (one JSON document, or Markdown
files) and ``import`` (an export document, or with ``--from`` the files where a team
keeps memory: :mod:`.markdown`)."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, TextIO

import typer

from ...protocol.errors import InputError, StoreError
from ..fsutil import atomic_write
from . import markdown, output
from .memory import JsonOpt, ProjectOpt, open_store

if TYPE_CHECKING:
    from .. import MemoryStore

__all__ = ["PROGRESS_THRESHOLD", "register", "stderr_progress"]

#: Imports with at least this many memories show a progress bar on stderr.
PROGRESS_THRESHOLD = 200


def _exists(path: Path) -> InputError:
    return InputError(
        f"{path} already exists (an earlier export or backup?); nothing was written. "
        "Choose a new path with --output, or add --force to replace it"
    )


def export(
    directory: Annotated[
        Path | None,
        typer.Argument(metavar="[DIR]", help="With --format markdown: the folder to write."),
    ] = None,
    output_file: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to this file (mode 0600) instead of stdout."),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", metavar="json|markdown", help="markdown: one file per memory in DIR."
        ),
    ] = "json",
    project: Annotated[
        str | None,
        typer.Option("--project", "-p", help="With --format markdown: only this project."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the --output file (or differing files).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Export every memory (with history and provenance) as one JSON document, or each
    live memory as a Markdown file with front matter (--format markdown DIR)."""
    if fmt == "markdown":
        return markdown.export_markdown(directory, project=project, force=force, as_json=as_json)
    if fmt != "json" or directory is not None or project is not None:
        raise InputError(
            f"export --format {fmt}: give --format json (the default: one document, every "
            "project, to --output or stdout) or --format markdown DIR"
        )
    if output_file is not None and output_file.exists() and not force:
        raise _exists(output_file)
    with open_store(readonly=True) as store:
        # streamed, one entry per line: memory stays bounded whatever the store's size
        if output_file is None:
            _export_to(store, sys.stdout)
            return
        count: list[int] = []

        def write(fh: BinaryIO) -> None:
            text = io.TextIOWrapper(fh, encoding="ascii", newline="\n", write_through=False)
            count.append(_export_to(store, text))
            text.flush()
            text.detach()

        try:
            if not atomic_write(output_file, write, mode=0o600, exclusive=not force):
                raise _exists(output_file)
        except OSError as exc:
            raise InputError(
                f"cannot write the export to {output_file}: {exc.strerror}; "
                "choose a writable path with --output"
            ) from exc
    summary = {
        "path": str(output_file),
        "bytes": output_file.stat().st_size,
        "memories": count[0] if count else None,
    }
    if as_json:
        output.emit_json(summary)
    else:
        output.say(
            f"exported {summary['memories']} memories to {summary['path']} "
            f"({summary['bytes']} bytes, mode 0600)"
        )


def _export_to(store: MemoryStore, out: TextIO) -> int:
    try:
        return store.export_to(out)
    except StoreError as exc:
        done = "what was printed is incomplete" if out is sys.stdout else "nothing was written"
        raise StoreError(
            f"export stopped: it could not read every memory of {store.path} ({exc}); {done}"
        ) from exc


def import_(
    source: Annotated[
        str | None,
        typer.Argument(
            metavar="FILE",
            help="An export file, or '-' for stdin; with --from, a file or folder "
            "(claude-auto-memory: the current project's folder when left out).",
        ),
    ] = None,
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="claude-md|agents-md|cursor-rules|markdown|claude-auto-memory",
            help="Read memories from where a team keeps them; a preview unless --apply.",
        ),
    ] = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="With --from: store them (private, for review).")
    ] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import an export document; importing the same file twice changes nothing. With
    --from: every CLAUDE.md or AGENTS.md of a repository, .cursor/rules, a Markdown
    folder or Claude Code's auto memory, previewed first."""
    if from_ is not None:
        path = None if source is None else Path(source)
        return markdown.import_from(from_, path, apply=apply, project=project, as_json=as_json)
    if apply or project is not None:
        raise InputError("--apply and --project go with --from; an export file is imported whole")
    if source is None:
        raise InputError("give the export file to import, or '-' to read it from stdin")
    try:  # read one entry at a time: memory stays bounded whatever the file's size
        with ExitStack() as stack:
            stream: TextIO = sys.stdin
            if source != "-":
                stream = stack.enter_context(Path(source).open(encoding="utf-8"))
            store = stack.enter_context(open_store())
            progress = stderr_progress(stack, "importing", "versions", minimum=PROGRESS_THRESHOLD)
            result = store.import_stream(stream, name=source, progress=progress)
    except OSError as exc:
        raise InputError(f"cannot read {source}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{source} is not UTF-8 text; pass a file made by 'sealmem export'"
        ) from exc
    for message in result.warnings:
        output.warn(message)
    if as_json:
        output.emit_json(result.to_dict())
    else:
        output.say(
            f"imported {source}: {result.added} added, {result.updated} updated, "
            f"{result.unchanged} unchanged, {result.skipped} skipped"
        )


def stderr_progress(
    stack: ExitStack, label: str, unit: str, *, minimum: int = 0
) -> Callable[..., None] | None:
    """A rich progress bar on stderr for a long command, only when stderr is a terminal.

    Elsewhere (a pipe, a log file, a test) nothing is drawn: the summary line on stdout
    says what happened.  The callback takes ``(done, total)`` and, optionally, the name
    of the step under way.
    """
    if sys.stderr is None or not sys.stderr.isatty():
        return None
    task: list[Any] = []

    def progress(done: int, total: int, step: str = "") -> None:
        if total < minimum:
            return
        if not task:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                unit,
                TimeElapsedColumn(),
                console=Console(file=sys.stderr),
            )
            stack.enter_context(bar)
            task.extend([bar, bar.add_task(label, total=total)])
        task[0].update(task[1], completed=done, description=f"{label} {step}".rstrip())

    return progress


def register(app: typer.Typer) -> None:
    app.command()(export)
    app.command("import")(import_)
