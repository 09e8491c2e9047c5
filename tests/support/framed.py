"""Reading a framed agent context (``client/recall/framing.py``) in tests."""

from __future__ import annotations

from sealmem.client.recall.framing import CLOSE, OPEN, quote


def framed(text: str) -> list[str]:
    """The memory lines of a context: those between its opening and closing marks."""
    lines = text.splitlines()
    if OPEN not in lines:
        return []
    start = lines.index(OPEN) + 1
    return lines[start : lines.index(CLOSE, start)]


def q(marks: str, text: str) -> str:
    """The line of one memory with ``marks`` (``kind, ...``) and ``text``."""
    return f"- [{marks}] {quote(text)}"
