"""Member display names, and the characters that must never reach a person's screen raw.

Names are shown to people (``team status``, ``admin requests``, next to every
teammate's memory) and come from outside: a join request anyone can drop into
the folder, a roster.  A name is 1..64 characters and holds no character a
terminal acts on or that hides text from the reader:

- controls: C0 ``U+0000..U+001F``, DEL and C1 ``U+007F..U+009F`` (ESC starts the
  sequences that retitle a window or erase the screen);
- format characters (Unicode general category Cf): the soft hyphen, bidi marks,
  embeddings, overrides and isolates ``U+202A..U+202E``, ``U+2066..U+2069``, the
  zero-width space, word joiner, invisible operators, BOM, tags, ...;
- the line and paragraph separators ``U+2028``, ``U+2029``; surrogates.

The set is the fixed table :data:`HIDDEN_RANGES` (Unicode 15.0), not the Unicode
version of the running Python, so every member draws the line in the same place.
One exception keeps real names writable: the zero-width non-joiner and joiner
``U+200C``/``U+200D`` are allowed *between two non-ASCII characters that are
neither hidden nor whitespace* (Persian and Indic spellings, emoji sequences);
at an end, next to ASCII, a space or another hidden character they could only
hide, and are refused.

:func:`hidden_at` is the same rule for one position of any text: the CLI uses it
to escape what it prints.

A name also holds no Hangul filler (``U+115F``, ``U+1160``, ``U+3164``,
``U+FFA0``: letters that render blank), and neither starts nor ends with
whitespace: ``"alice\u3164"`` or ``"alice "`` would show as ``alice``.

Names that merely *look* alike stay writable (``Alice``, Cyrillic ``аlice``) but
must not pass for one another: :func:`name_skeleton` folds a name to what a
reader sees (NFKC, case folded, whitespace and invisible characters removed,
common Cyrillic and Greek look-alikes of Latin letters replaced), and a reader
shows the short member id next to every name whose skeleton another member's
name (or ``you``) shares.  The fold is deliberately small, not Unicode's full
confusables table (UTS #39): it catches the look-alikes of Latin names that an
impostor reaches for first, not every homoglyph of every script; the short id
is what tells members apart.
"""

from __future__ import annotations

import bisect
import functools
import unicodedata

__all__ = ["FILLERS", "HIDDEN_RANGES", "MAX_NAME", "hidden_at", "name_problem", "name_skeleton"]

MAX_NAME = 64

#: Inclusive code point ranges refused in names and escaped on a terminal:
#: Cc, Cf, Zl, Zp and Cs of Unicode 15.0.
HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605),
    (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
    (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xD800, 0xDFFF), (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
_STARTS = [start for start, _ in HIDDEN_RANGES]
_JOINERS = frozenset({0x200C, 0x200D})

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


def hidden_at(text: str, i: int) -> bool:
    """Whether ``text[i]`` is a character a terminal acts on or that hides text."""
    cp = ord(text[i])
    if not _in_table(cp):
        return False
    if cp in _JOINERS and 0 < i < len(text) - 1:
        return not (_joinable(text[i - 1]) and _joinable(text[i + 1]))
    return True


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a member's display name, or None when it can."""
    if not 1 <= len(name) <= MAX_NAME:
        return f"must be 1..{MAX_NAME} characters (it has {len(name)})"
    for i in range(len(name)):
        if hidden_at(name, i):
            return (
                f"holds U+{ord(name[i]):04X} at position {i + 1}: names may not contain "
                "control, format (bidi, zero-width) or line separator characters"
            )
        if ord(name[i]) in FILLERS:
            return (
                f"holds U+{ord(name[i]):04X} at position {i + 1}: names may not contain "
                "Hangul fillers, which show as blank space"
            )
    if name[0].isspace() or name[-1].isspace():
        return "starts or ends with whitespace; remove it"
    return None


@functools.lru_cache(maxsize=4096)
def name_skeleton(name: str) -> str:
    """What ``name`` looks like to a reader: two names with one skeleton may be mistaken.

    NFKC (full-width and styled letters become plain ones), case folded,
    whitespace, control and format characters and Hangul fillers removed, and
    common Cyrillic/Greek look-alikes of Latin letters replaced by the Latin
    letter.  A small fold, not UTS #39: see the module docstring.  It follows the
    Unicode version of the running Python (it only decides when to show a short
    member id, or whether an admin is warned of a duplicate name).
    """
    text = unicodedata.normalize("NFKC", name).casefold()
    kept = "".join(
        ch for ch in text if not (ch.isspace() or ord(ch) in FILLERS or _in_table(ord(ch)))
    )
    return unicodedata.normalize("NFC", kept.translate(_LOOKALIKES))
