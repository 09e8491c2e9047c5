"""What the full-text index holds beside the words unicode61 sees: the ``grams`` of a text.

FTS5's ``unicode61`` tokenizer splits at spaces and punctuation, so a run of a script
written without spaces is one token: ``図片缓存を消す`` is a single term, and a word
inside it (``缓存``) is found by no query of that word.  Emoji and other symbols
(Unicode categories So and Sk) are separators to it: they are not indexed at all.
:func:`grams` lists, for such a text, the extra tokens the index keeps in its
``grams`` column and a query asks for (:func:`sealmem.client.store.terms.query_word_stems`):

- each run of a script without spaces (Han, Hiragana, Katakana, Bopomofo, Yi, Thai,
  Lao, Khmer, Myanmar, Tibetan) as its bigrams, ``缓存`` in ``图片缓存`` being one, and
  a run of one character as that character; combining marks are left out (unicode61
  splits a word at a Thai tone mark), so a run is its letters and digits;
- each run of Hangul the same way (:data:`HANGUL_RANGES`): Korean puts spaces between
  words but glues its particles and endings to them (``서버가``, ``서버를``), so the
  word ``서버`` is found as a bigram of either, with no table of particles;
- in the index (``tails``, not in a query), the last character of each run of two or
  more: with the bigrams, every character of a run then begins one of the run's terms,
  so a query of one character (``猫``, ``책``), asked as a prefix, finds every memory
  that holds it (``recall.search``);
- a piece of another script glued to such a run (``redis`` in ``redisのキャッシュ``),
  which unicode61 holds only inside the one long token;
- each emoji or symbol as one ASCII token, ``emoji`` then its code points in decimal,
  each followed by ``x`` (``🔥`` is ``emoji128293x``): a ZWJ sequence, a skin-tone or
  tag sequence and a flag (two regional indicators) are one token, variation
  selectors are dropped (``❤️`` is ``❤``).  The closing ``x`` keeps one symbol's token
  from being the start of another's, so a prefix query of a symbol finds only the
  sequences that begin with it.

A bigram's characters are letters or digits that unicode61 keeps as they are (no case,
no diacritic): the bigram is its own index term (``tests/client/test_scripts.py``
checks every character of the runs).  Text with no such run and no symbol has no
grams: ASCII text costs one ``str.isascii`` call.  Nothing here touches SQLite.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = [
    "EMOJI_PREFIX",
    "HANGUL_RANGES",
    "RUN_RANGES",
    "gram_tokens",
    "grams",
    "has_run",
    "is_run",
]

RUN_RANGES = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303C),
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x31A0, 0x31BF),  # Bopomofo extended
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA000, 0xA4CF),  # Yi
    (0xA9E0, 0xA9FF),  # Myanmar extended B
    (0xAA60, 0xAA7F),  # Myanmar extended A
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # halfwidth Katakana
    (0x16FE0, 0x16FFF),  # ideographic symbols
    (0x1B000, 0x1B16F),  # kana supplement, extended
    (0x20000, 0x323AF),  # CJK extensions B to H, compatibility supplement
)
"""The code point ranges of scripts written without spaces between words."""

HANGUL_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xD7B0, 0xD7FF),  # Hangul Jamo extended B
    (0xFFA0, 0xFFDC),  # halfwidth Hangul
)
"""Hangul: spaced, but with particles glued to its words; its runs are gram runs too."""

EMOJI_PREFIX = "emoji"
"""How the token of an emoji or symbol begins (its code points follow)."""


def _class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in ranges)


@functools.cache
def _marks() -> dict[int, None]:
    """The combining marks inside the runs' ranges: left out of a run (built on the first
    text that holds a run, not on import: every process imports this module, few meet
    such a text, and the walk over the ranges' 250,000 code points takes some 14 ms)."""
    return {
        cp: None
        for lo, hi in RUN_RANGES + HANGUL_RANGES
        for cp in range(lo, hi + 1)
        if unicodedata.category(chr(cp))[0] == "M"
    }


_WORD_RE = re.compile(r"[^\W_]+")


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The runs' patterns, compiled on the first text that is not all ASCII (their large
    classes take some 5 ms to compile; ASCII text never needs them): a run (one pattern
    for finding, matching and splitting at runs), and a symbol, a non-ASCII character
    that is no letter, digit or space (category So or Sk is checked on its first), with
    what joins it into one emoji."""
    chars = _class(RUN_RANGES + HANGUL_RANGES)
    joiners = "\ufe0e\ufe0f\U0001f3fb-\U0001f3ff\U000e0020-\U000e007f\u20e3"
    symbol = (
        "[\U0001f1e6-\U0001f1ff]{2}"  # a flag: two regional indicators
        f"|[^\\w\\s\x00-\x7f{joiners}\u200d](?:[{joiners}]|\u200d[^\\w\\s\x00-\x7f\u200d])*"
    )
    return re.compile(f"([{chars}]+)"), re.compile(symbol)


_DROPPED = {0xFE0E: None, 0xFE0F: None}


def has_run(word: str) -> bool:
    """Whether ``word`` holds a character of a script written without spaces."""
    return not word.isascii() and _patterns()[0].search(word) is not None


def is_run(token: str) -> bool:
    """Whether ``token`` is all characters of the runs (a bigram: its own index term)."""
    return _patterns()[0].fullmatch(token) is not None


def gram_tokens(text: str, tails: bool = False) -> list[str]:
    """The extra tokens of ``text`` (see the module docstring), each once, in the order
    they first appear; none for ASCII text.  ``tails``: the index's, with the last
    character of each run (a query asks for the bigrams alone)."""
    if text.isascii():
        return []
    if not unicodedata.is_normalized("NFC", text):  # Hangul typed as jamo, kana and a
        text = unicodedata.normalize("NFC", text)  # combining mark: the letters as composed
    out: dict[str, None] = {}
    run_re, symbol_re = _patterns()
    if run_re.search(text) is not None:
        for word in _WORD_RE.findall(text.translate(_marks())):
            if run_re.search(word) is None:
                continue
            for i, piece in enumerate(run_re.split(word)):
                if not i % 2:  # between runs: glued to one
                    if piece:
                        out[piece] = None
                elif len(piece) == 1:
                    out[piece] = None
                else:
                    out.update(dict.fromkeys(map(str.__add__, piece, piece[1:])))
                    if tails:
                        out[piece[-1]] = None
    for match in symbol_re.finditer(text):
        symbol = match.group()
        if unicodedata.category(symbol[0]) not in ("So", "Sk"):
            continue
        codes = symbol.translate(_DROPPED)
        out[EMOJI_PREFIX + "".join(f"{ord(c)}x" for c in codes)] = None
    return list(out)


def grams(text: str) -> str:
    """:func:`gram_tokens` of ``text`` with their tails, space-joined (what the ``grams``
    column holds)."""
    return " ".join(gram_tokens(text, tails=True))
