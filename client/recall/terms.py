"""Words and stems of a text, as FTS5's ``porter unicode61`` tokenizer sees them.

Recall tokenizes queries and candidate memories in Python to compute its ranking
features (term coverage, context from neighbouring memories, entity matches);
splitting and stemming them the way FTS5 does keeps those features in step with
the full-text index.  This module is small on purpose: the store's write path
imports it to keep each memory's stems (:func:`stored_stems`), so that recall
does not stem every candidate it looks at.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from .stemmer import stem

__all__ = ["parse_stems", "stems_of", "stored_stems", "tokens"]

_TOKEN_RE = re.compile(r"[^\W_]+")
# ASCII text: a letter or digit is a token character (lower-cased), anything else a
# separator; ``str.translate`` + ``split`` is the same split as ``_TOKEN_RE`` there,
# about twice as fast (stemming at every write made it worth it)
_ASCII_WORDS = str.maketrans({i: chr(i).lower() if chr(i).isalnum() else " " for i in range(128)})


def _fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def tokens(text: str) -> list[str]:
    """Lower-case, diacritic-free word tokens, split as FTS5's unicode61 splits."""
    if text.isascii():
        return text.translate(_ASCII_WORDS).split()
    return _TOKEN_RE.findall(_fold(text))


def _stems(text: str) -> frozenset[str]:
    return frozenset(map(stem, set(tokens(text))))


@lru_cache(maxsize=8192)
def stems_of(text: str) -> frozenset[str]:
    """The distinct stems FTS5's porter tokenizer indexes for ``text``.

    Cached: recall looks at the same memories again and again; a cold text is
    split once and each distinct word stemmed once (the stems are cached too).
    """
    return _stems(text)


def stored_stems(content: str, keywords: str) -> str:
    """What ``memories.stems`` holds for a row with this ``content`` and ``keywords``
    (the space-joined column): its distinct stems, sorted, space-joined (a stem holds
    no space).  :func:`parse_stems` of it is ``stems_of(f"{content} {keywords}")``."""
    return " ".join(sorted(_stems(f"{content} {keywords}")))


def parse_stems(stored: str) -> frozenset[str]:
    """The stems a ``memories.stems`` value holds."""
    return frozenset(stored.split())
