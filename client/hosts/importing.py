"""``sealmem import --from``: read the files where a team keeps memory, plan, store.

:func:`gather` reads a ``CLAUDE.md``/``AGENTS.md`` file or every one of a repository
(each nested file's rules scoped to its folder), a ``.cursor/rules`` folder (or the
older single ``.cursorrules`` file), a basic-memory/Obsidian folder or a Claude Code
auto memory folder (:mod:`.automemory` finds it; :mod:`.sources` makes the memories)
without following a symbolic link anywhere below
the path given, nor reading anything but regular files of a bounded size; a file that
cannot be read is refused by name and the rest goes on.  The source is only read,
never written.

:func:`plan` says, without writing, which memories are new and which the project
already holds (the store's own rule for "the same text": normalized, redacted text,
:func:`~sealmem.client.store.writes.find_twin`); :func:`apply` creates the new ones,
private, written by ``import`` (their record's ``source``), origin ``import``: they wait
in the review queue (:mod:`.review`, ``sealmem captured``) until a person shares them.
A second run finds every memory already held and writes nothing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...protocol.errors import InputError
from ..store import inputs
from ..store.redact import redact_texts
from ..store.rows import norm_hash
from ..store.writes import find_twin, kinds_like
from .sources import (
    AUTO_MEMORY,
    FORMATS,
    Candidate,
    Unreadable,
    from_auto_memory,
    from_claude_rule,
    from_cursor_rule,
    from_note,
    from_rules,
    index_target,
    scoped,
)

if TYPE_CHECKING:
    from ..recall.api import MemoryStore

__all__ = [
    "AUTO_MEMORY",
    "MAX_DEPTH",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_MEMORIES",
    "ORIGIN",
    "Gathered",
    "Planned",
    "apply",
    "gather",
    "plan",
]

MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 10_000
MAX_MEMORIES = 10_000  # one 1 MiB file of bullets makes 100,000 (25 s, 290 MB)
MAX_DEPTH = 200  # folders deep a walk enters (os.walk recurses: RecursionError past ~990)
ORIGIN = "import"
_RULE_FILES = {"claude-md": "CLAUDE.md", "agents-md": "AGENTS.md"}
_SKIPPED_DIRS = frozenset({".git", ".obsidian", ".trash", "node_modules"})
_TREE_SKIPPED = frozenset(
    {
        *(".git", ".hg", ".svn", "node_modules", "bower_components", "vendor"),
        *(".venv", "venv", "__pycache__", ".tox", ".nox", ".eggs", "site-packages"),
        *(".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache"),
        *("build", "dist", "target", ".next", ".nuxt", ".gradle", ".terraform"),
    }
)
"""What a repository walk for nested rules files leaves out: version control, installed
dependencies, virtualenvs (also any folder holding ``pyvenv.cfg``), caches and build
output, where a rules file belongs to someone else's code or is a copy."""


@dataclass
class Gathered:
    """What the files gave: the memories, each file or memory refused (where, why), and
    what the store said while storing them (a secret redacted)."""

    candidates: list[Candidate] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def take(self, found: list[Candidate], where: str) -> bool:
        """Keep the memories of one file up to :data:`MAX_MEMORIES` in all; past that,
        False and ``where`` refused by name (what is left of it and later files unread)."""
        room = MAX_MEMORIES - len(self.candidates)
        self.candidates += found[: max(room, 0)]
        if len(found) <= room:
            return True
        self.refused.append((where, f"over {MAX_MEMORIES} memories in all; the rest left"))
        return False


@dataclass(frozen=True)
class Planned:
    """A candidate, its text as it would be stored (secrets redacted), and what an
    import does with it: ``new``, ``stored`` (the project holds the same text) or
    ``repeat`` (an earlier memory of this import has it)."""

    candidate: Candidate
    content: str
    status: str


def _read(path: Path) -> str:
    """A regular file's UTF-8 text, opened without following a link; ``Unreadable``."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise Unreadable(f"it is a symbolic link (to {os.readlink(path)}), not followed")
        fd = os.open(path, flags)
    except OSError as exc:
        raise Unreadable(f"it cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("it is not a regular file")
        data = fh.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise Unreadable(f"it is over {MAX_FILE_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"it is not UTF-8 text (byte {exc.start})") from None


def _walk(
    root: Path,
    wanted: Callable[[str], bool],
    got: Gathered,
    skipped: frozenset[str] = _SKIPPED_DIRS,
) -> Iterator[tuple[Path, str]]:
    """``(file, name relative to root)`` of every file below ``root`` whose name (relative
    to root, ``/``-separated) is ``wanted``, sorted, links refused (a linked folder is
    not entered, so a link loop ends there), the folders of ``skipped`` and virtualenvs
    left out, a folder that cannot be read or is nested past :data:`MAX_DEPTH` refused
    by name."""
    count = 0

    def unlisted(exc: OSError) -> None:
        where = _rel(Path(exc.filename), root) if exc.filename else root.name
        got.refused.append((where, f"it cannot be read ({exc.strerror})"))

    for here, dirs, files in os.walk(root, onerror=unlisted, followlinks=False):
        base = Path(here)
        deep = base != root and len(base.relative_to(root).parts) >= MAX_DEPTH
        for d in sorted(dirs):
            why = None if d in skipped else _unentered(base / d, deep)
            if why is not None:
                got.refused.append((_rel(base / d, root), why))
            if d in skipped or why is not None or _is_venv(base / d):
                dirs.remove(d)
        dirs.sort()
        for name in sorted(files):
            rel = _rel(base / name, root)
            if not wanted(rel):
                continue
            count += 1
            if count > MAX_FILES:
                got.refused.append((_rel(base, root), f"over {MAX_FILES} files; the rest left"))
                return
            yield base / name, rel


def _unentered(folder: Path, deep: bool = False) -> str | None:
    """Why the walk does not enter ``folder`` (a link; one past :data:`MAX_DEPTH`, when
    ``deep``; a folder it cannot look at, such as one past the system's path limit), or
    None."""
    try:
        if stat.S_ISLNK(os.lstat(folder).st_mode):
            return "a symbolic link, not followed"
        if deep:
            return f"nested over {MAX_DEPTH} folders deep, not entered"
        os.stat(folder / "pyvenv.cfg", follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    return None


def _is_venv(folder: Path) -> bool:
    """A Python virtualenv, whatever its name (PEP 405: it holds ``pyvenv.cfg``)."""
    return (folder / "pyvenv.cfg").is_file()


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path != root else path.name


def _legacy_cursor(path: Path) -> bool:
    """A ``.cursorrules`` file (Cursor's single rules file of before ``.cursor/rules``),
    or a project holding one and no ``.cursor/rules`` folder."""
    if path.is_file():
        return path.name == ".cursorrules"
    return (path / ".cursorrules").is_file() and not (path / ".cursor" / "rules").is_dir()


def _rules_file(fmt: str, file: Path, got: Gathered) -> Gathered:
    """One Markdown rules file: a memory per bullet or paragraph (:func:`from_rules`)."""
    try:
        text = _read(file)
    except Unreadable as exc:
        raise InputError(f"cannot import {file}: {exc}; nothing was stored") from None
    got.take(from_rules(text, label=fmt, name=file.name), file.name)
    return got


_CLAUDE_RULES = "/.claude/rules/"


def _scope_of(name: str) -> str:
    """The folder a rules file (``name`` relative to the root) applies to: its own, or
    for ``X/.claude/CLAUDE.md`` (Claude Code reads it as ``X/CLAUDE.md``) and the files
    of ``X/.claude/rules/`` ``X``."""
    cut = f"/{name}".find(_CLAUDE_RULES)
    if cut >= 0:
        return f"/{name}"[1:cut] if cut else ""
    parts = name.split("/")[:-1]
    if parts and parts[-1] == ".claude":
        parts = parts[:-1]
    return "/".join(parts)


def _rules_tree(fmt: str, root: Path, got: Gathered) -> Gathered:
    """Every ``AGENTS.md`` (or ``CLAUDE.md``, and the ``.claude/rules/*.md`` files Claude
    Code loads beside it) of a repository: the root's and the nested ones, each rule
    scoped to the folder its file applies to."""
    wanted = _RULE_FILES[fmt]

    def rules_file(name: str) -> bool:
        if fmt == "claude-md" and _CLAUDE_RULES in f"/{name}":
            return _is_md(name)
        return name.rsplit("/", 1)[-1] == wanted

    found = 0
    for file, name in _walk(root, rules_file, got, _TREE_SKIPPED):
        found += 1
        try:
            text = _read(file)
            if _CLAUDE_RULES in f"/{name}":
                candidates = from_claude_rule(text, name=name, stem=file.stem)
            else:
                candidates = from_rules(text, label=fmt, name=name)
        except Unreadable as exc:
            got.refused.append((name, str(exc)))
            continue
        scope = _scope_of(name)
        if not got.take([scoped(c, scope) for c in candidates], name):
            break
    if not found and not got.refused:
        raise InputError(f"no {wanted} in {root} or below it; give the file or its repository")
    return got


def _auto_memory(folder: Path, got: Gathered) -> Gathered:
    """A Claude Code auto memory folder: ``MEMORY.md`` (its index lines left to the topic
    files they point at) and every topic file below it."""
    files = [(folder, folder.name)] if folder.is_file() else list(_walk(folder, _is_md, got))
    topics = {name for _, name in files if name != "MEMORY.md"}
    for file, name in files:
        try:
            found = from_auto_memory(_read(file), name=name, stem=file.stem)
        except Unreadable as exc:
            got.refused.append((name, str(exc)))
            continue
        if not got.take([c for c in found if index_target(c.content) not in topics], name):
            break
    return got


def _is_md(name: str) -> bool:
    return name.lower().endswith(".md")


def gather(fmt: str, path: Path) -> Gathered:
    """The memories of ``path`` read as ``fmt`` (:data:`~.sources.FORMATS`)."""
    if fmt not in FORMATS:
        raise InputError(f"--from {fmt!r} is not a source: give one of {', '.join(FORMATS)}")
    if not path.exists():
        raise InputError(f"{path} does not exist; give the file or folder to import")
    got = Gathered()
    if fmt == AUTO_MEMORY:
        return _auto_memory(path, got)
    if fmt == "cursor-rules" and _legacy_cursor(path):
        return _rules_file(fmt, path if path.is_file() else path / ".cursorrules", got)
    if fmt in _RULE_FILES:
        return _rules_tree(fmt, path, got) if path.is_dir() else _rules_file(fmt, path, got)
    if fmt == "cursor-rules":
        return _cursor_rules(path, got)
    files = [(path, path.name)] if path.is_file() else _walk(path, _is_md, got)
    for file, name in files:
        try:
            note = from_note(_read(file), name=name)
        except Unreadable as exc:
            got.refused.append((name, str(exc)))
            continue
        if not got.take([note], name):
            break
    return got


_RULES_DIR = "/.cursor/rules/"


def _cursor_rules(path: Path, got: Gathered) -> Gathered:
    """``.mdc`` rules: one file, a folder of them, or a project: then every
    ``.cursor/rules`` folder in its tree, each nested one's rules scoped to the folder
    holding it (Cursor, https://docs.cursor.com/context/rules: "subdirectories can
    include their own .cursor/rules directory scoped to that folder")."""
    project = path.is_dir() and (path / ".cursor" / "rules").is_dir()
    if path.is_file():
        files: Iterator[tuple[Path, str]] = iter([(path, path.name)])
    else:
        skipped = _TREE_SKIPPED if project else _SKIPPED_DIRS
        files = _walk(path, lambda n: n.lower().endswith(".mdc"), got, skipped)
    for file, name in files:
        cut = f"/{name}".rfind(_RULES_DIR)
        if project and cut < 0:
            continue  # an .mdc file outside .cursor/rules is no rule of the project
        try:
            rule = from_cursor_rule(_read(file), name=name, stem=file.stem)
        except Unreadable as exc:
            got.refused.append((name, str(exc)))
            continue
        if not got.take([scoped(rule, f"/{name}"[1:cut] if cut > 0 else "")], name):
            break
    return got


def _checked(store: MemoryStore, candidate: Candidate) -> tuple[str, str]:
    """``(stored text, kind)`` as a write would make them; ``InputError`` otherwise."""
    content = redact_texts(inputs.content(candidate.content)).content
    kind = candidate.kind
    if kind not in inputs.BUILTIN_KINDS and kinds_like(store.connection, kind) != [kind]:
        kind = "note"
    return content, kind


def plan(store: MemoryStore, project: str, got: Gathered) -> list[Planned]:
    """What an import of ``got`` into ``project`` would do, each memory checked as a
    write checks it (one refused by name in ``got.refused``); nothing is written."""
    out: list[Planned] = []
    seen: set[str] = set()
    for candidate in got.candidates:
        try:
            content, _ = _checked(store, candidate)
        except InputError as exc:
            got.refused.append((candidate.where, str(exc)))
            continue
        key = norm_hash(content) or ""
        if key in seen:
            status = "repeat"
        elif find_twin(store.connection, project, content, store.author) is not None:
            status = "stored"
        else:
            status = "new"
        seen.add(key)
        out.append(Planned(candidate, content, status))
    return out


def apply(store: MemoryStore, project: str, planned: list[Planned], got: Gathered) -> int:
    """Create each ``new`` memory of ``planned``, private and marked ``import``; the
    number created (one refused by the store goes to ``got.refused``)."""
    created = 0
    for item in planned:
        if item.status != "new":
            continue
        candidate = item.candidate
        try:
            _, kind = _checked(store, candidate)
            result = store.remember(
                candidate.content,
                kind=kind,
                keywords=candidate.keywords,
                importance=0.5 if candidate.importance is None else candidate.importance,
                project=project,
                private=True,
                origin=ORIGIN,
                source="import",
            )
        except InputError as exc:
            got.refused.append((candidate.where, str(exc)))
            continue
        got.warnings += [f"{candidate.where}: {w}" for w in result.warnings]
        created += result.created
    return created
