"""``sealmem import --from ...`` and ``sealmem export --format markdown DIR``: memory in
the files teams already keep (``CLAUDE.md``, ``AGENTS.md``, ``.cursor/rules``, a
basic-memory or Obsidian folder, Claude Code's auto memory), in and out.

An import is a preview until ``--apply``: one line per memory it would create (what the
project already holds is not created again), escaped; applied, the new memories are
private and marked ``import``, waiting in ``sealmem captured`` until shared.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...protocol.errors import InputError
from . import output
from .memory import open_store, resolve_project

__all__ = ["export_markdown", "import_from"]

_PREVIEW_CHARS = 72


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= _PREVIEW_CHARS else line[: _PREVIEW_CHARS - 3] + "..."


def _memories(count: int) -> str:
    return f"{count} private {'memory' if count == 1 else 'memories'}"


def import_from(
    fmt: str, path: Path | None, *, apply: bool, project: str | None, as_json: bool
) -> None:
    """Preview (or with ``apply`` store) the memories of ``path`` read as ``fmt``; for
    Claude Code's auto memory ``path`` defaults to the current project's folder."""
    from ..hosts import importing

    if fmt == importing.AUTO_MEMORY:
        from ..hosts.automemory import folder_for

        path = folder_for(path)
    elif path is None:
        raise InputError(f"--from {fmt} reads a file or folder: give its path")
    got = importing.gather(fmt, path)
    target = resolve_project(project)
    with open_store(readonly=not apply) as store:
        planned = importing.plan(store, target, got)
        created = importing.apply(store, target, planned, got) if apply else 0
    counts = {s: sum(p.status == s for p in planned) for s in ("new", "stored", "repeat")}
    if as_json:
        doc: dict[str, Any] = {
            "from": fmt,
            "path": str(path),
            "project": target,
            "applied": apply,
            "created": created,
            "memories": [
                {
                    "status": p.status,
                    "kind": p.candidate.kind,
                    "keywords": list(p.candidate.keywords),
                    "where": p.candidate.where,
                    "content": p.content,
                }
                for p in planned
            ],
            "refused": [{"where": where, "why": why} for where, why in got.refused],
            "warnings": got.warnings,
        }
        output.emit_json(doc)
        return
    if fmt == importing.AUTO_MEMORY:  # the folder it found (or was given)
        output.say(output.one_line(f"Claude Code auto memory: {path}"))
    for p in planned:
        c = p.candidate
        words = ", ".join(c.keywords)
        line = f"{p.status:<6} {c.kind:<8} [{words}] {_first_line(p.content)}  ({c.where})"
        output.say(output.one_line(line))
    for where, why in got.refused:
        output.warn(output.one_line(f"refused {where}: {why}"))
    for message in got.warnings:
        output.warn(output.one_line(message))
    held = f"{counts['stored']} already in project {target}, {counts['repeat']} repeated"
    if apply:
        output.say(
            f"created {_memories(created)} in project {target} ({held}); "
            "review and share them with 'sealmem captured'"
        )
    else:
        output.say(
            f"would create {_memories(counts['new'])} in project {target} ({held}); "
            "nothing was written: add --apply to store them"
        )


def export_markdown(
    directory: Path | None, *, project: str | None, force: bool, as_json: bool
) -> None:
    """Write one Markdown file per live memory into ``directory``."""
    from ..store.markdown import plan_files, write_files

    if directory is None:
        raise InputError(
            "--format markdown writes one file per memory into a folder: give the folder, "
            "e.g. sealmem export --format markdown ./memories"
        )
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory} is a file, not a folder; give a folder to export into")
    try:
        with open_store(readonly=True) as store:
            plan = plan_files(store.connection, directory, project)
        written = write_files(directory, plan, force=force)
    except OSError as exc:
        raise InputError(
            f"cannot export into {directory}: {exc.strerror} ({exc.filename}); "
            "choose a folder you can write"
        ) from exc
    summary = {
        "path": str(directory),
        "written": written,
        "unchanged": len(plan.unchanged),
        "replaced": len(plan.different) if force else 0,
    }
    if as_json:
        output.emit_json(summary)
        return
    output.say(
        f"exported to {directory}: {written} files written ({summary['replaced']} replaced), "
        f"{summary['unchanged']} unchanged"
    )
