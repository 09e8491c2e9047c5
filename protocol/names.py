"""Member display names, and the characters that must never reach a person's screen raw.

Names are shown to people (``team status``, ``admin requests``, next to every
teammate's memory) and come from outside: a join request anyone can drop into the
folder, a roster.  The rules, the fixed table of hidden code points (Unicode 15.0, not
the running Python's, so every member draws the line in the same place) and the
look-alike skeleton: SPEC.md "Names" and "Look-alike names".

:func:`hidden_at` is the same rule for one position of any text: the CLI uses it to
escape what it prints.  :func:`name_skeleton` is deliberately small, not Unicode's
full confusables table (UTS #39): it catches the look-alikes of Latin names that an
impostor reaches for first; the short member id is what tells members apart.
"""

from __future__ import annotations

import bisect
import functools
import unicodedata
from collections.abc import Iterable

from .encoding import KID_RE

__all__ = [
    "FILLERS",
    "HIDDEN_RANGES",
    "MAX_NAME",
    "MIN_ID_PREFIX",
    "hidden_at",
    "id_like",
    "name_problem",
    "name_skeleton",
    "select",
]

MAX_NAME = 64

#: Inclusive code point ranges refused in names and escaped on a terminal:
#: Cc, Cf, Zl, Zp and Cs of Unicode 15.0, the rest of its Default_Ignorable_Code_Point
#: set but the Hangul fillers (:data:`FILLERS`), and code points that render as nothing:
#: U+2800 (the blank braille pattern) and U+1D159 (a musical null notehead).
HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x034F, 0x034F),
    (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F),
    (0x0890, 0x0891), (0x08E2, 0x08E2), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x206F), (0x2800, 0x2800),
    (0xD800, 0xDFFF), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3),
    (0x1D159, 0x1D159), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
_STARTS = [start for start, _ in HIDDEN_RANGES]
_JOINERS = frozenset({0x200C, 0x200D})
#: Variation selectors (standardized, Mongolian, ideographic): they pick the glyph of the
#: character before them, so they are allowed right after a visible non-ASCII one.
_SELECTORS: tuple[tuple[int, int], ...] = (
    (0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF),
)  # fmt: skip

#: Hangul fillers: letters (category Lo) that render as blank space.
FILLERS = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0})

#: Cyrillic and Greek letters (after case folding) that look like a Latin letter.
_LOOKALIKES = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "ё": "ë", "һ": "h", "н": "h",
        "і": "i", "ї": "ï", "ј": "j", "к": "k", "ӏ": "l", "м": "m", "о": "o", "р": "p",
        "ԛ": "q", "г": "r", "ѕ": "s", "т": "t", "у": "y", "ү": "y", "ѵ": "v", "ԝ": "w",
        "х": "x",
        # Greek
        "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "ί": "í", "κ": "k", "μ": "m",
        "ν": "v", "ο": "o", "ό": "ó", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y",
        "ζ": "z", "ω": "w",
        # Latin look-alikes of other Latin letters
        "ı": "i", "ɑ": "a", "ɡ": "g",
    }
)  # fmt: skip


def _in_table(cp: int) -> bool:
    i = bisect.bisect_right(_STARTS, cp) - 1
    return i >= 0 and cp <= HIDDEN_RANGES[i][1]


def _joinable(ch: str) -> bool:
    cp = ord(ch)
    return cp > 0x7F and not _in_table(cp) and not ch.isspace()


def _selector(cp: int) -> bool:
    return any(a <= cp <= b for a, b in _SELECTORS)


def hidden_at(text: str, i: int) -> bool:
    """Whether ``text[i]`` is a character a terminal acts on or that hides text."""
    cp = ord(text[i])
    if not _in_table(cp):
        return False
    if cp in _JOINERS and 0 < i < len(text) - 1:
        # on the left a visible non-ASCII code point, or a selector right after one (an
        # emoji's presentation before the joiner: U+2764 U+FE0F U+200D U+1F525)
        left = _joinable(text[i - 1]) or (
            i > 1 and _selector(ord(text[i - 1])) and _joinable(text[i - 2])
        )
        return not (left and _joinable(text[i + 1]))
    if i > 0 and _selector(cp):
        return not _joinable(text[i - 1])
    return True


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a member's display name, or None when it can."""
    if not 1 <= len(name) <= MAX_NAME:
        return f"must be 1..{MAX_NAME} characters (it has {len(name)})"
    for i in range(len(name)):
        if hidden_at(name, i):
            return (
                f"holds U+{ord(name[i]):04X} at position {i + 1}: names may not contain "
                "control, format (bidi, zero-width), invisible or line separator characters"
            )
        if ord(name[i]) in FILLERS:
            return (
                f"holds U+{ord(name[i]):04X} at position {i + 1}: names may not contain "
                "Hangul fillers, which show as blank space"
            )
    if name[0].isspace() or name[-1].isspace():
        return "starts or ends with whitespace; remove it"
    return None


#: ASCII look-alikes (after case folding), from Unicode's confusables for ASCII (UTS #39:
#: ``I``, ``1``, ``|`` read as ``l``; ``0`` as ``O``; ``m`` as ``rn``; ``d`` as ``cl``), plus
#: ``vv`` as ``w`` and the digits ``5`` and ``8`` as the ``S`` and ``B`` they pass for.
#: ``i`` joins ``l`` too: a capital ``I`` is both (``aIice`` looks like ``alice``, ``ALICE``
#: is ``alice`` in capitals), and one skeleton per name cannot tell the two apart.
_ASCII_LOOKALIKES = str.maketrans({"i": "l", "1": "l", "|": "l", "0": "o", "5": "s", "8": "b"})
_ASCII_PAIRS = (("rn", "m"), ("vv", "w"), ("cl", "d"))


@functools.lru_cache(maxsize=4096)
def name_skeleton(name: str) -> str:
    """What ``name`` looks like to a reader: two names with one skeleton may be mistaken.

    NFKC, case folding, hidden code points and whitespace removed, Cyrillic and Greek
    look-alikes folded to Latin, then the ASCII look-alikes (SPEC.md "Look-alike names":
    ``aIice``, ``a1ice`` and ``alice`` share ``allce``; ``b0b`` and ``bob`` share ``bob``).
    It follows the Unicode version of the running Python (it only decides when to show
    a short member id, or whether an admin is warned of a duplicate name)."""
    text = unicodedata.normalize("NFKC", name).casefold()
    kept = "".join(
        ch for ch in text if not (ch.isspace() or ord(ch) in FILLERS or _in_table(ord(ch)))
    )
    latin = kept.translate(_LOOKALIKES).translate(_ASCII_LOOKALIKES)
    for pair, single in _ASCII_PAIRS:
        latin = latin.replace(pair, single)
    return unicodedata.normalize("NFC", latin)


MIN_ID_PREFIX = 8
"""The shortest start of a member id that names a member (``admin grant 3xk7q2mz ...``)."""


def id_like(name: str, kids: Iterable[str]) -> str | None:
    """The member id ``name`` reads as, when it would (else None): a new name must not be
    the start (8+ characters) of a member's or waiting request's id, nor shaped like a
    full member id, or ``admin grant NAME`` would mean two members to two people."""
    if KID_RE.fullmatch(name):
        return name
    if len(name) >= MIN_ID_PREFIX:
        return next((kid for kid in kids if kid.startswith(name)), None)
    return None


def select(selector: str, entries: Iterable[tuple[str, str | None]]) -> tuple[list[str], list[str]]:
    """Who ``selector`` names among ``entries`` (kid, name): the kids it is (a full id wins
    alone) or starts (8+ characters), and the kids whose name has its skeleton.

    Callers take the one kid both lists agree on and refuse anything else as
    ambiguous: a name that is another member's short id never wins over the id.
    """
    entries = list(entries)
    exact = [kid for kid, _ in entries if kid == selector]
    if exact:
        return exact, []
    by_id = (
        [kid for kid, _ in entries if kid.startswith(selector)]
        if len(selector) >= MIN_ID_PREFIX
        else []
    )
    key = name_skeleton(selector)
    by_name = [kid for kid, name in entries if name is not None and name_skeleton(name) == key]
    return by_id, by_name
