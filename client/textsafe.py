"""Text from outside made visible: the one rule for terminals and pages.

Much of what sealmem shows came from outside (teammates' memories, names from
a join request anyone can drop, refusal details quoting a planted file).
:func:`visible` shows control, format (bidi, zero-width) and separator
characters as escapes (``\\x1b``, ``\\u202e``) so that nothing a teammate
wrote can act on a terminal or reorder a page.  Newlines and tabs stay.  The
characters are the table :data:`sealmem.protocol.names.HIDDEN_RANGES`.
"""

from __future__ import annotations

import json
import re

from ..protocol.names import HIDDEN_RANGES, hidden_at

__all__ = ["as_seen", "visible", "visible_json"]

_HIDDEN = re.compile(
    "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in HIDDEN_RANGES) + "]"
)
_KEPT = "\n\t"


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _KEPT or not hidden_at(match.string, match.start()):
        return ch
    cp = ord(ch)
    return f"\\x{cp:02x}" if cp <= 0xFF else f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def visible(text: str) -> str:
    """``text`` with hidden characters shown as escapes, newlines and tabs kept."""
    return _HIDDEN.sub(_escape, text)


def _escape_json(match: re.Match[str]) -> str:
    ch = match.group()
    return json.dumps(ch)[1:-1] if hidden_at(match.string, match.start()) else ch


def visible_json(quoted: str) -> str:
    """A JSON string (``json.dumps(..., ensure_ascii=False)``) with the hidden characters
    it left raw written as JSON escapes (``\\u202e``, a surrogate pair above U+FFFF), so
    an invisible run of text (tag characters, zero-width, bidi) shows as what it is."""
    return _HIDDEN.sub(_escape_json, quoted)


def _drop(match: re.Match[str]) -> str:
    ch = match.group()
    return ch if ch.isspace() or not hidden_at(match.string, match.start()) else ""


def as_seen(text: str) -> str:
    """``text`` as a person sees it: without its hidden characters (whitespace kept)."""
    return _HIDDEN.sub(_drop, text)
