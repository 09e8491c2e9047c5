"""Validation of the arguments of the local API, before anything touches the store.

Each function returns the cleaned value or raises :class:`InputError` saying
what was refused and what would be accepted.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence

from ...protocol.errors import InputError
from ...protocol.record import (
    KIND_RE,
    MAX_CONTENT_CHARS,
    MAX_KEYWORD_CHARS,
    MAX_KEYWORDS,
    MAX_ORIGIN_CHARS,
    MAX_REASON_CHARS,
    MAX_SUPERSEDES,
    PROJECT_RE,
    SOURCES,
    Source,
)
from .memory import DEFAULT_PROJECT

__all__ = [
    "BUILTIN_KINDS",
    "content",
    "importance",
    "keywords",
    "kind",
    "known_kind",
    "origin",
    "project",
    "reason",
    "source",
    "supersedes",
    "text",
]

# The kinds every store knows; any other one must have been used in the store before,
# or be asked for on purpose (``new_kind``, CLI ``--kind-new``), so a typo is not a kind.
BUILTIN_KINDS = ("note", "decision", "warning", "lesson", "fact", "preference", "trace")


def text(value: str, what: str) -> str:
    """``value`` if it has a UTF-8 form: a lone surrogate (U+D800..U+DFFF: bytes that
    were not UTF-8, kept as surrogate escapes by Python's argv or a JSON ``\\udcff``)
    cannot be stored, nor synced, nor exported, so it is refused by name."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"the {what} is not UTF-8 text: character {exc.start + 1} is a lone surrogate "
            f"U+{ord(value[exc.start]):04X} (often bytes in another encoding); convert it "
            "to UTF-8 first (e.g. iconv -f latin1 -t utf-8); nothing was stored"
        ) from None
    return value


def project(project: str | None) -> str:
    if project is not None and not isinstance(project, str):
        raise InputError(f"project {project!r} is not a name: give it as text")
    name = DEFAULT_PROJECT if project is None else project.strip()
    if not PROJECT_RE.match(name):
        raise InputError(
            f"project {name!r} is not a valid name: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def kind(kind: str) -> str:
    value = kind.strip().lower() if isinstance(kind, str) else ""
    if not KIND_RE.match(value):
        raise InputError(
            f"kind {kind!r} is not valid: use a lower-case word such as note, decision, "
            "warning, lesson, fact, preference or trace"
        )
    return value


def known_kind(value: str, used: Iterable[str], new_kind: bool) -> str:
    """``value`` (already :func:`kind`-checked) if built in, used before, or ``new_kind``;
    else :class:`InputError` listing the known kinds, the nearest one suggested."""
    known = sorted(set(BUILTIN_KINDS) | set(used))
    if new_kind or value in known:
        return value
    near = difflib.get_close_matches(value, known, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise InputError(
        f"unknown kind {value!r}: {hint}known kinds are {', '.join(known)}; to start a new "
        "kind on purpose, repeat with --kind-new (new_kind=True in the API and MCP tool); "
        "nothing was stored"
    )


def importance(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise InputError(f"importance {value!r} must be a number between 0 and 1")
    if not 0.0 <= value <= 1.0:
        raise InputError(f"importance {value} must be between 0 and 1")
    return round(float(value), 3)  # the wire carries thousandths


def origin(origin: str) -> str:
    value = origin.strip() if isinstance(origin, str) else ""
    if not 1 <= len(value) <= MAX_ORIGIN_CHARS:
        raise InputError(f"origin {origin!r} must be 1..{MAX_ORIGIN_CHARS} characters")
    return text(value, "origin")


def source(value: object) -> Source:
    """Who writes the text (:data:`~sealmem.protocol.record.SOURCES`), refused by name."""
    for known in SOURCES:
        if value == known:
            return known
    raise InputError(
        f"source {value!r} is not one of {', '.join(SOURCES)}: say who writes the text "
        "(a person, an agent tool, a hook capture, an import); nothing was stored"
    )


def content(value: object) -> str:
    """A memory's text, stripped; refused when empty, not UTF-8 or over the limit."""
    if not isinstance(value, str) or not value.strip():
        raise InputError("content is empty; pass the text to remember")
    text_ = text(value.strip(), "memory text")
    if len(text_) > MAX_CONTENT_CHARS:
        raise InputError(
            f"content is {len(text_)} characters; the limit is {MAX_CONTENT_CHARS}: "
            "split it into several memories"
        )
    return text_


def reason(value: object) -> str:
    """Why a memory is forgotten, stripped; refused when empty, not UTF-8 or over the limit."""
    if not isinstance(value, str) or not value.strip():
        raise InputError("forget needs a reason (why this memory is wrong or unwanted)")
    reason = text(value.strip(), "reason")
    if len(reason) > MAX_REASON_CHARS:
        raise InputError(f"the reason is {len(reason)} characters; the limit is {MAX_REASON_CHARS}")
    return reason


def keywords(keywords: Sequence[str]) -> list[str]:
    if isinstance(keywords, str):
        keywords = keywords.replace(",", " ").split()
    if not isinstance(keywords, Iterable):
        raise InputError(f"keywords {keywords!r} must be a list of words")
    out: list[str] = []
    seen: set[str] = set()
    for raw in keywords:
        word = text(" ".join(str(raw).split()), f"keyword number {len(out) + 1}")
        if not word or word.casefold() in seen:
            continue
        if len(word) > MAX_KEYWORD_CHARS:
            # No excerpt of the word: an over-long "keyword" is often a pasted token.
            raise InputError(
                f"keyword number {len(out) + 1} is {len(word)} characters; the limit is "
                f"{MAX_KEYWORD_CHARS} (keywords are short search words)"
            )
        seen.add(word.casefold())
        out.append(word)
    if len(out) > MAX_KEYWORDS:
        raise InputError(f"{len(out)} keywords given; the limit is {MAX_KEYWORDS}")
    return out


def supersedes(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, Iterable):
        raise InputError(f"supersedes {ids!r} must be a list of memory ids")
    out: list[str] = []
    for raw in ids:
        value = str(raw).strip().lower()
        if not value:
            raise InputError("a supersedes entry is empty; give a memory id")
        if value not in out:
            out.append(value)
    if len(out) > MAX_SUPERSEDES:
        raise InputError(f"supersedes names {len(out)} ids; the limit is {MAX_SUPERSEDES}")
    return out
