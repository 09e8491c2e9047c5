"""Output for the CLI: one JSON document for machines, plain aligned text for people.

Every data command takes ``--json``; it then prints exactly one JSON document on
stdout and nothing else there.  Human output is plain text (no colour codes), so
it reads the same in a terminal, a pipe and a test.  Warnings go to stderr.

Much of what is printed came from outside (teammates' memories, names from a
join request anyone can drop, refusal details quoting a planted file): every
line for people goes through :func:`say` or :func:`warn`, which show control,
format (bidi, zero-width) and separator characters as visible escapes
(``\\x1b``, ``\\u202e``) so that nothing a teammate wrote can act on the
terminal.  Newlines and tabs stay.  JSON is ASCII-only (``\\u`` escapes).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..textsafe import visible

if TYPE_CHECKING:
    from .. import Memory

__all__ = [
    "clean",
    "emit_json",
    "format_time",
    "memory_block",
    "one_line",
    "provenance_label",
    "say",
    "table",
    "warn",
    "why_line",
]


def clean(text: str) -> str:
    """``text`` safe for a terminal: hidden characters shown as escapes, newlines kept."""
    return visible(text)


def one_line(text: str) -> str:
    """``text`` from outside (a refusal detail quoting a planted file) as one line:
    :func:`clean`, and newlines and tabs shown as ``\\n`` and ``\\t`` too."""
    return clean(text).replace("\n", "\\n").replace("\t", "\\t")


def say(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print ``text`` for people (on stderr with ``err``), escaped by :func:`clean`."""
    import typer  # here, not at the top: the hooks use clean() without typer

    typer.echo(clean(text), err=err, nl=nl)


#: JSON documents printed by this run (:func:`emit_json`); ``main`` resets it.
emitted = [0]


def emit_json(document: Any) -> None:
    """Print ``document`` as one JSON document on stdout (ASCII: nothing raw reaches a tty)."""
    import typer

    typer.echo(json.dumps(document, indent=2, ensure_ascii=True, sort_keys=True))
    emitted[0] += 1


def warn(message: str) -> None:
    """Print a warning for people on stderr."""
    say(f"warning: {message}", err=True)


def format_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def provenance_label(
    memory: Memory, names: Mapping[str, str] | None = None, me: str | None = None
) -> str:
    """Who wrote this version and how it arrived, e.g. ``by alice via hub (verified)``,
    and who wrote its text when not a person (``, agent-written``).

    The writer is the local member or the verified signer (:meth:`Memory.authorship`),
    never the record's claimed ``author``, which is shown only as a claim.
    """
    who = memory.authorship(names, me)
    label = f"by {who.writer_name} via {who.transport}"
    if who.claim_differs:
        label += f" (claimed author: {who.claimed_author_name})"
    if not who.mine:
        label += " (verified)" if who.verified else " (unverified)"
    if who.source_tag:
        label += f", {who.source_tag}"
    return label


def _cell(text: str) -> str:
    return clean(text).replace("\n", " ").replace("\t", " ")


def table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    cells = [list(headers), *[[_cell(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers) - 1)]
    lines = []
    for row in cells:
        padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text, prefix, lambda _line: True)


def memory_block(
    memory: Memory,
    *,
    heading: str = "",
    extra: Iterable[str] = (),
    full: bool = False,
    names: Mapping[str, str] | None = None,
    me: str | None = None,
) -> str:
    """A memory for people: a header line, the content (indented), then details."""
    rec = memory.record
    tags = [rec.kind, f"project {rec.project}", provenance_label(memory, names, me)]
    if rec.visibility == "private":
        tags.append("private")
    if rec.deleted:
        tags.append("FORGOTTEN")
    head = f"{heading}{rec.id}  [{', '.join(tags)}]"
    body = rec.content
    if rec.deleted:
        body = f"(forgotten: {rec.delete_reason or 'no reason recorded'})"
    elif not full and len(body) > 400:
        body = body[:400].rstrip() + " …"
    lines = [head, _indent(body)]
    details = list(extra)
    if rec.keywords:
        details.append("keywords: " + ", ".join(rec.keywords))
    if rec.supersedes:
        details.append("supersedes: " + ", ".join(rec.supersedes))
    if full:
        details.append(f"importance: {rec.importance:.2f}   seen: {memory.seen_count}x")
        details.append(
            f"created: {format_time(rec.created_at)}   origin: {rec.origin}   "
            f"text by: {rec.written_by}"
        )
    lines.extend(_indent(d) for d in details)
    return "\n".join(lines)


def why_line(why: Mapping[str, float]) -> str:
    """The ranking components of a hit on one line."""
    return "why: " + "  ".join(f"{name}={value:.3f}" for name, value in why.items())
