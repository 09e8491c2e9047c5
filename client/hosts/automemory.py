"""Where Claude Code keeps its auto memory for a project, found as Claude Code finds it.

Claude Code's documentation (https://code.claude.com/docs/en/memory, "Auto memory",
"Storage location"): each project has its own folder
``~/.claude/projects/<project>/memory/`` holding ``MEMORY.md`` (the index, loaded at the
start of every session) and topic files; ``<project>`` is derived from the git
repository, so every worktree and subfolder of one repository shares the folder
(outside git, the project root is used); the ``autoMemoryDirectory`` setting moves it,
and is taken from the user's settings and a project's ``.claude/settings.local.json``,
never from the committed ``.claude/settings.json``.  ``<project>`` is the absolute path
of that root with every character outside ``[A-Za-z0-9]`` turned into ``-`` (one per
UTF-16 unit, as JavaScript counts them); a name over 200 characters is cut there and
ends in a hash this module does not compute: the one folder that starts so is taken.

:func:`locate` and :func:`folder_for` only read: settings, ``.git`` files, folder names
(regular files, a bounded size); a moved folder is taken only when it holds ``MEMORY.md``.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from ...protocol.errors import InputError
from .configs import claude_dir

__all__ = ["INDEX", "MAX_NAME", "encode", "folder_for", "locate", "repository_root"]

INDEX = "MEMORY.md"
MAX_NAME = 200
_SETTINGS_BYTES = 1024 * 1024
_POINTER_BYTES = 64 * 1024
_OUTSIDE = re.compile(r"[^A-Za-z0-9]")


def encode(root: Path) -> str:
    """The folder name Claude Code gives a project root (before any length cut)."""
    return _OUTSIDE.sub(lambda m: "-" * (2 if ord(m.group()) > 0xFFFF else 1), str(root))


def repository_root(cwd: Path) -> Path:
    """The root Claude Code keys auto memory to: the main checkout of the git repository
    ``cwd`` is in (a linked worktree's ``.git`` file names its common git folder), or
    ``cwd`` itself outside git."""
    here = cwd.absolute()
    for folder in (here, *here.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return folder
        if dot_git.is_file():
            return _main_checkout(folder, dot_git)
    return here


def _main_checkout(folder: Path, dot_git: Path) -> Path:
    """The main checkout of a linked worktree (``gitdir: <main>/.git/worktrees/<name>``
    and its ``commondir``); the worktree itself when the files say otherwise."""
    try:
        line = _small(dot_git, _POINTER_BYTES).decode("utf-8", errors="replace").strip()
        if not line.startswith("gitdir:"):
            return folder
        gitdir = (folder / line.removeprefix("gitdir:").strip()).resolve()
        common = gitdir
        if (gitdir / "commondir").is_file():
            pointer = _small(gitdir / "commondir", _POINTER_BYTES).decode("utf-8").strip()
            common = (gitdir / pointer).resolve()
    except (OSError, ValueError):
        return folder
    return common.parent if common.name == ".git" else folder


def _small(file: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file; ``OSError`` for anything else (a FIFO
    or ``/dev/stdin`` a repository links its file to would wait for ever)."""
    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(f"{file} is not a regular file")
        return fh.read(limit)


def _setting(file: Path) -> Path | None:
    """``autoMemoryDirectory`` of one settings file, when absolute (``~`` expanded)."""
    try:
        value = json.loads(_small(file, _SETTINGS_BYTES)).get("autoMemoryDirectory")
    except (OSError, ValueError, RecursionError, AttributeError):  # RecursionError: nested
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    path = Path(os.path.expanduser(value.strip()))
    return path if path.is_absolute() else None


def _projects_entry(projects: Path, name: str) -> Path:
    """``projects/<name>``; for a name over :data:`MAX_NAME`, the one folder holding its
    first :data:`MAX_NAME` characters and a hash."""
    if len(name) <= MAX_NAME:
        return projects / name
    prefix = name[:MAX_NAME] + "-"
    try:
        found = sorted(p for p in projects.iterdir() if p.name.startswith(prefix))
    except OSError:
        found = []
    return found[0] if len(found) == 1 else projects / prefix


def locate(cwd: Path) -> Path:
    """The auto memory folder of the project ``cwd`` is in; ``InputError`` naming where
    it was looked for when there is none."""
    root = repository_root(cwd)
    for settings in (root / ".claude" / "settings.local.json", claude_dir() / "settings.json"):
        moved = _setting(settings)
        if moved is not None:
            return _moved(settings, moved)
    folder = _projects_entry(claude_dir() / "projects", encode(root)) / "memory"
    if not folder.is_dir():
        raise InputError(
            f"no Claude Code auto memory for {root}: {folder} does not exist; "
            "give the memory folder (it holds MEMORY.md): "
            "sealmem import --from claude-auto-memory PATH"
        )
    return folder


def _moved(settings: Path, folder: Path) -> Path:
    """The folder ``autoMemoryDirectory`` names, when it holds ``MEMORY.md`` (a project's
    own settings file could name ``~/.ssh`` or ``/``); ``InputError`` naming the file."""
    try:
        if (folder / INDEX).is_file():
            return folder
    except OSError:  # a name past the system's limit
        pass
    shown = str(folder) if len(str(folder)) <= 200 else f"{str(folder)[:200]}..."
    raise InputError(
        f"{settings} sets autoMemoryDirectory to {shown}, which holds no {INDEX}: not read "
        "as auto memory; give the memory folder: sealmem import --from claude-auto-memory PATH"
    )


def folder_for(path: Path | None) -> Path:
    """What ``import --from claude-auto-memory [PATH]`` reads: a file or a folder holding
    ``MEMORY.md`` as given (``<project>/memory`` when given ``<project>``), else the auto
    memory of the project ``PATH`` (default: the current directory) is in, so that a
    repository given by mistake is not read as notes."""
    if path is not None and not path.exists():
        raise InputError(f"{path} does not exist; give the auto memory folder or its project")
    if path is not None and (path.is_file() or (path / INDEX).is_file()):
        return path
    if path is not None and (path / "memory" / INDEX).is_file():
        return path / "memory"
    return locate(Path.cwd() if path is None else path)
