"""Reading a framed agent context in tests.

The frame is spelled out here on purpose (not imported from ``client/recall/framing.py``):
these helpers pin the format an agent reads, ``- [marks] "<text as a JSON string>"``
with ``<`` and ``>`` escaped, between ``<sealmem-memories>`` and ``</sealmem-memories>``.
"""

from __future__ import annotations

import json

OPEN, CLOSE = "<sealmem-memories>", "</sealmem-memories>"


def framed(text: str) -> list[str]:
    """The memory lines of a context: those between its opening and closing marks."""
    lines = text.splitlines()
    if OPEN not in lines:
        return []
    start = lines.index(OPEN) + 1
    return lines[start : lines.index(CLOSE, start)]


def quoted(text: str) -> str:
    """``text`` as a framed line quotes it."""
    flat = json.dumps(" ".join(text.split()), ensure_ascii=False)
    return flat.replace("<", "\\u003c").replace(">", "\\u003e")


def q(marks: str, text: str) -> str:
    """The line of one memory with ``marks`` (``kind, ...``) and ``text``."""
    return f"- [{marks}] {quoted(text)}"
