"""Output for the CLI: one JSON document for machines, plain aligned text for people.

Every data command takes ``--json``; it then prints exactly one JSON document on
stdout and nothing else there.  Human output is plain text (no colour codes), so
it reads the same in a terminal, a pipe and a test.  Warnings go to stderr.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import typer

from ..team.names import author_label

if TYPE_CHECKING:
    from .. import Memory

__all__ = [
    "emit_json",
    "format_time",
    "memory_block",
    "provenance_label",
    "short_id",
    "table",
    "warn",
    "why_line",
]


def emit_json(document: Any) -> None:
    """Print ``document`` as one JSON document on stdout."""
    typer.echo(json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True))


def warn(message: str) -> None:
    """Print a warning for people on stderr."""
    typer.echo(f"warning: {message}", err=True)


def short_id(memory_id: str) -> str:
    """The last 12 hex digits, for narration; commands take the full id."""
    return memory_id[-12:]


def format_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def provenance_label(
    memory: Memory, names: Mapping[str, str] | None = None, me: str | None = None
) -> str:
    """Who wrote it and how it arrived, e.g. ``by alice via hub (verified)``."""
    prov = memory.provenance
    author = author_label(memory.record.author, names or {}, me)
    label = f"by {author} via {prov.transport}"
    if prov.signer_name and prov.signer_name != author:
        label += f" (this version by {prov.signer_name})"
    if prov.transport != "local":
        label += " (verified)" if prov.verified else " (unverified)"
    return label


def table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    cells = [list(headers), *[list(row) for row in rows]]
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
        details.append(f"created: {format_time(rec.created_at)}   origin: {rec.origin}")
    lines.extend(_indent(d) for d in details)
    return "\n".join(lines)


def why_line(why: Mapping[str, float]) -> str:
    """The ranking components of a hit on one line."""
    return "why: " + "  ".join(f"{name}={value:.3f}" for name, value in why.items())
