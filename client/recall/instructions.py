"""Instruction-like text in a memory: a hint for the person, not a filter.

A memory is data; text that reads as orders to an agent (imperatives aimed at it,
shell pipelines, URLs to fetch, "do not tell the user") is flagged where it is shown
(the agent contexts, the review queue) so that a person looks at it.  The rules are a
small table; text that slips past them is still only quoted data in a frame
(:mod:`.framing`), and text they flag is still shown.
"""

from __future__ import annotations

import re

from ..textsafe import as_seen

__all__ = ["HIDDEN", "RULES", "flags"]

_I = re.IGNORECASE
RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "shell pipeline",
        re.compile(
            r"\b(?:curl|wget|fetch|iwr|irm|invoke-webrequest)\b[^\n]*?\|\s*(?:sudo\s+)?"
            r"(?:ba|z|da|k)?sh\b|\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\s*(?:-s\b|$)|\b(?:ba)?sh\s+-c\s"
            r"|\bbase64\s+(?:-d|--decode)\b|\beval\s*[\"'(`$]|\bpowershell\b[^\n]*-enc",
            _I,
        ),
    ),
    ("URL", re.compile(r"\b(?:https?|ftp)://[^\s\"'<>]+|\bwww\.[a-z0-9-]+\.[a-z]{2,}", _I)),
    (
        "hides from the user",
        re.compile(
            r"\b(?:do\s+not|don'?t|never|without)\s+(?:tell(?:ing)?|mention(?:ing)?|"
            r"inform(?:ing)?|show(?:ing)?|report(?:ing)?|alert(?:ing)?|ask(?:ing)?)\b"
            r"[^.\n]{0,40}?\b(?:user|human|developer|anyone|them)\b"
            r"|\b(?:keep|hide)\s+(?:this|it)\s+(?:secret|hidden|quiet|from)\b"
            r"|\bsilently\b|\bwithout\s+(?:asking|confirmation)\b",
            _I,
        ),
    ),
    (
        "orders to the agent",
        re.compile(
            r"\bignore\s+(?:all\s+|any\s+)?(?:the\s+)?(?:previous|prior|above|earlier|other)\s+"
            r"(?:instructions?|rules?|messages?|memories)\b"
            r"|\b(?:before|after|at\s+the\s+start\s+of)\s+(?:any|every|each|all)\s+"
            r"(?:tasks?|commands?|sessions?|changes?|commits?|prompts?|requests?)\b"
            r"|\b(?:you|the\s+agent|the\s+assistant|claude|codex)\s+(?:must|should|shall|"
            r"need\s+to|have\s+to|are\s+required\s+to)\b"
            r"|\b(?:always|immediately)\s+(?:run|execute|install|download|send|upload|post|"
            r"curl|push|delete|disable)\b"
            r"|\bsystem\s+prompt\b|\bnew\s+instructions?\b|\bas\s+an\s+ai\b",
            _I,
        ),
    ),
)
"""(flag, pattern): the flags a text earns, in this order."""


HIDDEN = "hidden characters"
"""The flag of text holding characters a person cannot see (zero-width, bidi, tag
characters: :func:`sealmem.client.textsafe.as_seen`), which could also split a word to
slip past :data:`RULES`."""


def flags(text: str) -> list[str]:
    """The flags of :data:`RULES` that ``text`` matches (read without its hidden
    characters), in table order, then :data:`HIDDEN` when it holds any."""
    seen = as_seen(text)
    found = [name for name, pattern in RULES if pattern.search(seen)]
    return [*found, HIDDEN] if len(seen) < len(text) else found
