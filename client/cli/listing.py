"""The ``list`` table for people: short ids, the content wrapped to the terminal width.

Each row shows the first line of a memory's content in full (``full`` shows every
line), wrapped under the CONTENT column when the width is known (a terminal, or
``COLUMNS``); in a pipe a row stays one line, so ``grep`` sees it whole.  A memory
that a live one corrects is marked ``(superseded by <short id>)``, a tombstone
``(forgotten: <reason>)``, one never shared ``(private)``, one a teammate proposes to
delete ``(NAME proposes to delete it)``.  Text is escaped
(:func:`output.clean`) before it is measured, so a teammate's control characters can
neither act on the terminal nor break the columns.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..store.ids import short_id
from . import output

if TYPE_CHECKING:
    from .. import Memory
    from ..store.memory import Authorship

__all__ = ["HEADERS", "render", "terminal_width"]

HEADERS = ("ID", "UPDATED", "KIND", "AUTHOR", "CONTENT")
#: Below this many columns for the content, it goes on its own lines under the row.
MIN_CONTENT_WIDTH = 30
_MORE = " …"


def terminal_width() -> int | None:
    """Columns to wrap to: ``COLUMNS`` if set, else stdout's terminal; None in a pipe."""
    value = os.environ.get("COLUMNS", "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    if sys.stdout is not None and sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def _content(memory: Memory, newer: Sequence[Memory], *, full: bool, note: str) -> list[str]:
    """The content column of one row as lines (unwrapped), marks first."""
    rec = memory.record
    if rec.deleted:
        # the forgetter's words (a teammate's): on this row, a newline cannot start another
        return [f"(forgotten: {output.one_line(rec.delete_reason or 'no reason recorded')})"]
    mark = "(private) " if rec.visibility == "private" else ""
    mark += f"({output.one_line(note)}) " if note else ""
    if newer:
        mark += "(superseded by " + ", ".join(short_id(m.id) for m in newer) + ") "
    lines = [output.clean(line).replace("\t", " ").rstrip() for line in rec.content.split("\n")]
    while len(lines) > 1 and not lines[-1]:
        lines.pop()
    while len(lines) > 1 and not lines[0]:
        lines.pop(0)
    if not full:
        lines = [lines[0] + (_MORE if len(lines) > 1 else "")]
    lines[0] = mark + lines[0]
    return lines


def _wrap(lines: list[str], width: int | None) -> list[str]:
    if width is None:
        return lines
    out: list[str] = []
    for line in lines:
        out.extend(textwrap.wrap(line, width, break_on_hyphens=False) or [""])
    return out


def _writer(who: Authorship) -> str:
    """The AUTHOR cell: the writer, and who wrote the text when not a person."""
    return f"{who.writer_name} ({who.source_tag})" if who.source_tag else who.writer_name


def render(
    memories: Sequence[Memory],
    replaced: Mapping[str, Sequence[Memory]],
    *,
    names: Mapping[str, str],
    me: str,
    width: int | None,
    full: bool = False,
    notes: Mapping[str, str] | None = None,
) -> str:
    """The table: a header line, then each memory with its content (see the module doc);
    ``notes`` marks some memories (by id), e.g. a teammate's proposal to delete it."""
    rows = [
        [
            short_id(m.id),
            output.format_time(m.updated_at),
            output.clean(m.record.kind),
            output.clean(_writer(m.authorship(names, me))),
        ]
        for m in memories
    ]
    widths = [max(len(r[i]) for r in [list(HEADERS), *rows]) for i in range(len(HEADERS) - 1)]
    indent = sum(widths) + 2 * len(widths)
    below = width is not None and width - indent < MIN_CONTENT_WIDTH
    wrap_at = None if width is None else max(width - 4, 20) if below else width - indent
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=False)) + "  CONTENT"]
    for memory, row in zip(memories, rows, strict=True):
        head = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        note = (notes or {}).get(memory.id, "")
        content = _content(memory, replaced.get(memory.id, ()), full=full, note=note)
        parts = _wrap(content, wrap_at)
        if below:
            lines.append(head.rstrip())
            lines.extend("    " + part for part in parts)
            continue
        lines.append(f"{head}  {parts[0]}".rstrip())
        lines.extend((" " * indent + part).rstrip() for part in parts[1:])
    return "\n".join(lines)
