"""Where teams already keep memory, read as candidate memories (pure: text in, values out).

Four shapes, each a function over one file's text:

- :func:`from_rules` reads ``CLAUDE.md`` or ``AGENTS.md``: one memory per top-level
  bullet (with what is nested under it) or per paragraph; the headings above it become
  its keywords; a code block joins the memory before it in the same section; a
  paragraph of ``@path`` imports only (Claude Code reads those files) is left out.
- :func:`from_cursor_rule` reads one ``.cursor/rules/*.mdc`` file: front matter
  (``description``, ``globs``) and its body, one memory.
- :func:`from_note` reads one basic-memory or Obsidian note: front matter ``title``,
  ``tags``, ``type`` (and ``kind``, ``importance`` as ``sealmem export --format
  markdown`` writes them), the body, one memory.
- :func:`from_auto_memory` reads one file of Claude Code's auto memory folder: a topic
  file with front matter (``name``, ``description``, ``type``) is one memory, any other
  (``MEMORY.md`` itself, an older topic file) is read as a rules file; an index line of
  ``MEMORY.md`` that only points at a topic file (:func:`index_target`) is left to that
  file.  :func:`scoped` says which subtree a nested ``AGENTS.md``/``CLAUDE.md`` rule
  applies to.

:func:`guess_kind` says which kind a text reads as.  Front matter is YAML read with
``yaml.safe_load`` (no objects, no tags), bounded in size; what a file holds that does
not fit is :class:`Unreadable`, refused by the caller by name while the rest goes on.
"""

from __future__ import annotations

import posixpath
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import yaml
from markdown_it import MarkdownIt

from ...protocol.record import MAX_KEYWORD_CHARS, MAX_KEYWORDS
from ..store.inputs import BUILTIN_KINDS

__all__ = [
    "FORMATS",
    "MAX_FRONT_MATTER",
    "Candidate",
    "Unreadable",
    "from_auto_memory",
    "from_claude_rule",
    "from_cursor_rule",
    "from_note",
    "from_rules",
    "guess_kind",
    "index_target",
    "scoped",
    "split_front_matter",
]

FORMATS = ("claude-md", "agents-md", "cursor-rules", "markdown", "claude-auto-memory")
"""The ``--from`` choices, as their labels (also each memory's first keyword)."""

MAX_FRONT_MATTER = 64 * 1024


class Unreadable(ValueError):
    """A file whose text does not make a memory (the message says why)."""


@dataclass(frozen=True)
class Candidate:
    """One memory an import would create; ``where`` names its file and line."""

    content: str
    kind: str
    keywords: tuple[str, ...]
    where: str
    importance: float | None = None


_WARNING = re.compile(
    r"\b(never|always|must|must not|avoid|do not|don['’]t|doesn['’]t|cannot|can['’]t)\b", re.I
)
_DECISION = re.compile(
    r"^\s*(use|prefer)\b|\b(we decided|decided to|we chose|we use|we went with|decision)\b", re.I
)


def guess_kind(text: str) -> str:
    """``warning`` for a rule that forbids or insists (never, don't, always, must...),
    ``decision`` for a choice made (we decided, use X, prefer X), else ``note``."""
    if _WARNING.search(text):
        return "warning"
    if _DECISION.search(text):
        return "decision"
    return "note"


def _keywords(words: Iterable[object], *, marks: str = "") -> tuple[str, ...]:
    """Keyword strings from headings, tags or globs: the characters of ``marks`` (a
    heading's Markdown emphasis) dropped, a tag's leading ``#`` too, each cut to the
    keyword limit at a word, without repeats, at most the record's number."""
    out: list[str] = []
    for word in words:
        if not isinstance(word, str | int | float) or isinstance(word, bool):
            continue
        text = str(word).lstrip("#")
        if marks:
            text = re.sub(f"[{re.escape(marks)}]+", " ", text)
        text = " ".join(text.split()).lower()
        if len(text) > MAX_KEYWORD_CHARS:
            text = text[:MAX_KEYWORD_CHARS].rsplit(" ", 1)[0]
        if text and text not in out:
            out.append(text)
    return tuple(out[:MAX_KEYWORDS])


# -- CLAUDE.md, AGENTS.md ---------------------------------------------------------------

_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s+|$)(?:\[[ xX]\]\s+)?")
_IMPORTS = re.compile(r"@\S+(?:\s+@\S+)*")
_NEWLINE = re.compile(r"\r\n?|\n")


def _parser() -> MarkdownIt:
    """Blocks only: a memory is cut from its source lines, so the inline parse (links,
    emphasis) is never used, and a hostile 1 MiB line of ``[`` took it 24 s."""
    return MarkdownIt("commonmark").enable("table").disable("inline")


def _item_text(lines: list[str], start: int, end: int) -> str:
    """A list item's source lines, its marker removed and the rest dedented."""
    first = _MARKER.sub("", lines[start], count=1)
    rest = textwrap.dedent("\n".join(lines[start + 1 : end]))
    return "\n".join([first.strip(), rest]).strip()


def from_rules(text: str, *, label: str, name: str) -> list[Candidate]:
    """The memories of a ``CLAUDE.md``/``AGENTS.md`` text (``name`` labels each one's
    place; ``label`` is the format, the first keyword of each).  Front matter, if
    any, is left out."""
    text = text.removeprefix("\ufeff")
    try:
        _, body = split_front_matter(text)
    except Unreadable:
        body = text  # a '---' rule line, then text: no front matter
    skipped = text[: len(text) - len(body)].count("\n")
    # the lines as Markdown counts them (splitlines() also cuts at U+2028, \x0b...)
    lines = [""] * skipped + _NEWLINE.split(body)
    tokens = _parser().parse("\n" * skipped + body)
    headings: list[tuple[int, str]] = []  # (level, text) of the section we are in
    out: list[Candidate] = []
    section_start = 0  # index in ``out`` of the first memory of the current section

    def add(body: str, line: int) -> None:
        if not body.strip() or _IMPORTS.fullmatch(body.strip()):
            return  # nothing, or only CLAUDE.md's "@path" imports of other files
        words = _keywords([label, *(h for _, h in headings)], marks="*_`[]")
        out.append(Candidate(body.strip(), guess_kind(body), words, f"{name}:{line + 1}"))

    for i, tok in enumerate(tokens):
        if tok.level != 0 and tok.type != "list_item_open":
            continue
        if tok.type == "heading_open":
            level = int(tok.tag[1:])
            headings = [h for h in headings if h[0] < level]
            headings.append((level, tokens[i + 1].content.strip()))
            section_start = len(out)
        elif tok.type == "list_item_open" and tok.level == 1 and tok.map:
            add(_item_text(lines, *tok.map), tok.map[0])
        elif tok.type in {"fence", "code_block"} and tok.map:
            block = "\n".join(lines[tok.map[0] : tok.map[1]]).strip()
            if len(out) > section_start:  # the code belongs to the memory it follows
                last = out[-1]
                joined = f"{last.content}\n\n{block}"
                out[-1] = Candidate(joined, last.kind, last.keywords, last.where)
            else:
                add(block, tok.map[0])
        elif tok.map and tok.type.endswith("_open") and tok.level == 0:
            if tok.type in {"bullet_list_open", "ordered_list_open"}:
                continue  # its items are taken one by one
            add("\n".join(lines[tok.map[0] : tok.map[1]]), tok.map[0])
        # an HTML block (an editor's comment) or a rule line is no memory
    return out


def from_claude_rule(text: str, *, name: str, stem: str) -> list[Candidate]:
    """The memories of one ``.claude/rules/*.md`` file (Claude Code loads them as it
    loads ``.claude/CLAUDE.md``, https://code.claude.com/docs/en/memory, "Organize rules
    with .claude/rules/"): read as :func:`from_rules`, the file's name and the globs of
    its ``paths`` front matter (the files the rule is for) as keywords."""
    front, _ = split_front_matter(text)
    found = from_rules(text, label="claude-md", name=name)
    words = ["claude-md", stem, *_words(front.get("paths"))]
    return [replace(c, keywords=_keywords([*words, *c.keywords[1:]])) for c in found]


# -- front matter: .mdc rules, basic-memory and Obsidian notes ---------------------------

_FENCE = re.compile(r"\A---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.M)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(front matter, body)`` of a file's text; ``({}, text)`` when it has none.
    :class:`Unreadable` for front matter that is not a YAML mapping or is too large."""
    text = text.removeprefix("\ufeff")
    opening = _FENCE.match(text)
    if opening is None:
        return {}, text
    close = _CLOSE.search(text, opening.end())
    if close is None:
        raise Unreadable("its front matter (after the first '---') has no closing '---'")
    raw = text[opening.end() : close.start()]
    if len(raw) > MAX_FRONT_MATTER:
        raise Unreadable(f"its front matter is over {MAX_FRONT_MATTER // 1024} KiB")
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 2})" if mark is not None else ""
        raise Unreadable(f"its front matter is not valid YAML{at}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise Unreadable("its front matter is not a list of 'key: value' lines")
    return data, text[close.end() :].lstrip("\r\n")


def _words(value: object) -> list[object]:
    """Tags or globs: a list as it is, a string split at commas and spaces."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return list(value.replace(",", " ").split())
    return []


def _string(front: Mapping[str, Any], key: str) -> str:
    value = front.get(key)
    return " ".join(value.split()) if isinstance(value, str) else ""


def from_cursor_rule(text: str, *, name: str, stem: str) -> Candidate:
    """The memory of one ``.mdc`` rule: its description as the first line, its body;
    the rule's name and globs as keywords."""
    front, body = split_front_matter(text)
    description = _string(front, "description")
    body = body.strip()
    if description and not body.startswith(description):
        body = f"{description}\n\n{body}".strip()
    if not body:
        raise Unreadable("the rule has neither a description nor a body")
    words = _keywords(["cursor-rules", stem, *_words(front.get("globs"))])
    return Candidate(body, guess_kind(body), words, name)


def _headed(title: str, body: str) -> str:
    """``body`` stripped, with ``title`` as its first line unless it begins with it
    (spaces collapsed; a heading's ``#`` marks aside): the title is not written again."""
    body = body.strip()
    flat = " ".join(body.split())
    if not title or flat.startswith(title) or flat.lstrip("# ").startswith(title):
        return body
    return f"{title}\n\n{body}".strip()


def from_note(text: str, *, name: str) -> Candidate:
    """The memory of one note: its body, with its ``title`` as first line unless the
    body already starts with it; ``tags`` as keywords; the kind from ``kind`` or
    ``type`` when that is a built-in kind (else guessed, the type kept as a keyword)."""
    front, body = split_front_matter(text)
    body = _headed(_string(front, "title"), body)
    if not body:
        raise Unreadable("the note has neither a title nor a body")
    stated = _string(front, "kind").lower() or _string(front, "type").lower()
    tags: list[object] = list(_words(front.get("tags")))
    kind = stated if stated in BUILTIN_KINDS else guess_kind(body)
    if stated and stated not in BUILTIN_KINDS:
        tags.append(stated)
    stated_level = front.get("importance")
    level: float | None = None
    if isinstance(stated_level, int | float) and not isinstance(stated_level, bool):
        level = float(stated_level) if 0 <= stated_level <= 1 else None
    return Candidate(body, kind, _keywords(tags), name, level)


# -- nested rules files: the subtree a rule applies to ----------------------------------


def _scope_keyword(scope: str) -> str:
    """The folder as a keyword: its last path parts that fit the keyword limit."""
    parts = scope.split("/")
    while len(parts) > 1 and len("/".join(parts)) > MAX_KEYWORD_CHARS:
        parts = parts[1:]
    return "/".join(parts)[:MAX_KEYWORD_CHARS]


def scoped(candidate: Candidate, scope: str) -> Candidate:
    """A rule of a nested ``AGENTS.md``/``CLAUDE.md`` (``scope``: its folder below the
    imported root, ``/``-separated): the nearest file applies to its subtree
    (https://agents.md, "nested AGENTS.md files"), so the text says where it applies
    ("In packages/api/: ...", what an agent reading the memory sees) and the folder is
    its second keyword.  A rule of the root file (``scope`` empty) is left as it is."""
    if not scope:
        return candidate
    head = f"In {scope}/:"
    body = candidate.content
    content = f"{head}\n{body}" if body.startswith(("```", "~~~", "    ")) else f"{head} {body}"
    label, *rest = candidate.keywords
    words = [label, _scope_keyword(scope), *(w for w in rest if w != scope)]
    return replace(candidate, content=content, keywords=tuple(words[:MAX_KEYWORDS]))


# -- Claude Code's auto memory ----------------------------------------------------------

AUTO_MEMORY = "claude-auto-memory"
_INDEX_LINK = re.compile(r"\A\[[^\]\n]*\]\(<?([^)<>\s]+\.md)>?\)")
_AUTO_KINDS = {"user": "preference", "reference": "fact"}


def index_target(content: str) -> str | None:
    """The topic file an index line of ``MEMORY.md`` points at (``[Title](file.md) —
    hook``), as written; ``None`` for a line that is a memory of its own."""
    found = _INDEX_LINK.match(content.strip())
    return posixpath.normpath(found.group(1)) if found else None


def from_auto_memory(text: str, *, name: str, stem: str) -> list[Candidate]:
    """The memories of one file of a Claude Code auto memory folder
    (https://code.claude.com/docs/en/memory, "Auto memory").  A topic file whose front
    matter has ``name``, ``description`` or ``type`` is one memory: the description as
    first line unless the body starts with it, ``type`` ``user`` read as a preference,
    ``reference`` as a fact (else the kind is guessed), the type and name as keywords.
    Any other file is read as :func:`from_rules` reads ``CLAUDE.md``, its name a
    keyword (``MEMORY.md``'s is not: it is the index)."""
    try:
        front, body = split_front_matter(text)
    except Unreadable:
        front, body = {}, text
    if not any(key in front for key in ("name", "description", "type")):
        found = from_rules(text, label=AUTO_MEMORY, name=name)
        if stem == "MEMORY":
            return found
        return [replace(c, keywords=_keywords([AUTO_MEMORY, stem, *c.keywords[1:]])) for c in found]
    body = _headed(_string(front, "description"), body)
    if not body:
        raise Unreadable("the memory has neither a description nor a body")
    stated = _string(front, "type").lower()
    kind = _AUTO_KINDS.get(stated) or guess_kind(body)
    words = _keywords([AUTO_MEMORY, stated, _string(front, "name") or stem])
    return [Candidate(body, kind, words, name)]
