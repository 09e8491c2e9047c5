"""Export to Markdown: one file per live memory, with YAML front matter, for Obsidian and
basic-memory (``sealmem export --format markdown DIR``).

A file is ``<words>-<id fragment>.md``: a few lower-case ASCII words of the memory's first
line and the last 12 hex digits of its id, nothing else, so no text can make a path.
The front matter (``title``, ``id``, ``kind``, ``type``: basic-memory's name for the
kind, ``project``, ``tags``: the keywords, ``importance``, ``created``, ``writer``,
``source``, ``visibility``) is written by ``yaml.safe_dump``, which quotes and escapes
what needs it; the body is the memory's text.  ``sealmem import --from markdown`` reads
these files back (:mod:`sealmem.client.hosts.sources`).

Nothing is clobbered: :func:`plan_files` sorts each file into new, unchanged (the same
bytes are there) or different; :func:`write_files` refuses to replace a different one
unless told to (``--force``), before writing any.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ...protocol.errors import InputError
from ..fsutil import atomic_write
from .ids import short_id
from .memory import Memory
from .rows import MEMORY_COLUMNS, memory_from_row

__all__ = ["MarkdownPlan", "file_name", "plan_files", "render", "write_files"]

TITLE_CHARS = 80
_SLUG_WORDS = 6


def file_name(memory: Memory) -> str:
    """``<words>-<id fragment>.md``: only ``[a-z0-9-]`` before ``.md``."""
    first = next((ln for ln in memory.content.splitlines() if ln.strip()), "")
    words = re.findall(r"[a-z0-9]+", first.lower().encode("ascii", "ignore").decode())
    slug = "-".join(words[:_SLUG_WORDS])[:48].strip("-") or memory.kind or "memory"
    slug = re.sub(r"[^a-z0-9-]+", "", slug) or "memory"
    return f"{slug}-{short_id(memory.id)}.md"


def _title(content: str) -> str:
    """The first line, cut at a word to :data:`TITLE_CHARS` (a prefix of the text)."""
    line = next((ln.strip() for ln in content.splitlines() if ln.strip()), "")
    if len(line) <= TITLE_CHARS:
        return line
    cut = line[:TITLE_CHARS].rsplit(" ", 1)[0]
    return cut or line[:TITLE_CHARS]


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def render(memory: Memory) -> str:
    """The file's text: YAML front matter between ``---`` lines, then the memory's text."""
    record = memory.record
    front: dict[str, Any] = {
        "title": _title(record.content),
        "id": record.id,
        "kind": record.kind,
        "type": record.kind,
        "project": record.project,
        "tags": list(record.keywords),
        "importance": record.importance,
        "created": _iso(record.created_at),
        "writer": record.author,
        "source": memory.source,
        "visibility": record.visibility,
    }
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{head}---\n\n{record.content}\n"


def _memories(conn: sqlite3.Connection, project: str | None) -> Iterator[Memory]:
    where, params = "deleted = 0", []
    if project is not None:
        where += " AND project = ?"
        params.append(project)
    query = f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} ORDER BY created_at, id"
    for row in conn.execute(query, params):
        yield memory_from_row(row)


@dataclass
class MarkdownPlan:
    """The files an export writes (name, text), and those already there: the same
    bytes (``unchanged``) or other ones (``different``, with why)."""

    new: list[tuple[str, str]] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    different: list[tuple[str, str, str]] = field(default_factory=list)


def _existing(path: Path) -> bytes | str | None:
    """What ``path`` holds: its bytes, None when absent, or why it is not a file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link is there"
    if not stat.S_ISREG(info.st_mode):
        return "something that is not a file is there"
    return path.read_bytes()


def plan_files(conn: sqlite3.Connection, directory: Path, project: str | None) -> MarkdownPlan:
    """Sort every live memory's file (of ``project``, or all) into new, unchanged,
    different; reads ``directory``, writes nothing."""
    out = MarkdownPlan()
    for memory in _memories(conn, project):
        name, text = file_name(memory), render(memory)
        there = _existing(directory / name)
        if there is None:
            out.new.append((name, text))
        elif there == text.encode("utf-8"):
            out.unchanged.append(name)
        else:
            why = there if isinstance(there, str) else "a different file is there"
            out.different.append((name, text, why))
    return out


def write_files(directory: Path, plan: MarkdownPlan, *, force: bool) -> int:
    """Write the new files (and with ``force`` the different ones, replaced whole, a link
    replaced and not followed); refused before any write if a different one is there
    without ``force``.  The number of files written."""
    if plan.different and not force:
        shown = ", ".join(f"{name} ({why})" for name, _, why in plan.different[:3])
        more = len(plan.different) - 3
        extra = f" and {more} more" if more > 0 else ""
        raise InputError(
            f"{len(plan.different)} files in {directory} differ from what the export "
            f"would write: {shown}{extra}; nothing was written. Choose an empty folder, "
            "or add --force to replace them"
        )
    directory.mkdir(parents=True, exist_ok=True)
    todo = plan.new + [(name, text) for name, text, _ in plan.different]
    for name, text in todo:
        target = directory / name
        if force and target.is_dir() and not target.is_symlink():
            raise InputError(f"{target} is a folder; nothing more was written: move it away")
        atomic_write(target, text.encode("utf-8"), mode=0o600)
    return len(todo)
