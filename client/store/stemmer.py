"""The Porter stemmer (M.F. Porter, 1980), as SQLite's FTS5 ``porter`` tokenizer applies it.

The store stems the text of every row it writes (:mod:`sealmem.client.store.terms`),
so :data:`STEMS` remembers each word's stem (a dict whose misses compute it: a known
word costs one lookup, with no Python call, through ``STEMS.__getitem__``).

FTS5's stemmer differs from the paper in a few places, and this one follows
FTS5 (``fts5_tokenize.c``; a differential test checks it against SQLite): a
suffix matches only a longer word (``eed`` is stemmed by the ``ed`` rule to
``e``, ``ies`` loses only its ``s``), and step 1b's double consonant counts
``y`` as a consonant (``yyed`` -> ``y``).
"""

from __future__ import annotations

__all__ = ["STEMS", "stem"]

_VOWELS = frozenset("aeiou")


def _is_cons(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _is_cons(word, i - 1)
    return True


def _measure(stem_: str) -> int:
    """The number of VC sequences in ``stem_`` ([C](VC){m}[V])."""
    m = 0
    prev_vowel = False
    for i in range(len(stem_)):
        vowel = not _is_cons(stem_, i)
        if prev_vowel and not vowel:
            m += 1
        prev_vowel = vowel
    return m


def _has_vowel(stem_: str) -> bool:
    return any(not _is_cons(stem_, i) for i in range(len(stem_)))


def _double_cons(word: str) -> bool:
    """Step 1b's double consonant: two equal letters, not a vowel (``y`` counts)."""
    return len(word) >= 2 and word[-1] == word[-2] and word[-1] not in _VOWELS


def _ends(word: str, suffix: str) -> bool:
    """``word`` ends with ``suffix`` and is longer (FTS5's rules never match a suffix
    that is the whole word)."""
    return len(word) > len(suffix) and word.endswith(suffix)


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y."""
    if len(word) < 3:
        return False
    n = len(word)
    return (
        _is_cons(word, n - 3)
        and not _is_cons(word, n - 2)
        and _is_cons(word, n - 1)
        and word[-1] not in "wxy"
    )


def _replace(word: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    for suffix, repl in rules:
        if word.endswith(suffix) and len(word) > len(suffix):  # _ends, inlined: hot
            base = word[: len(word) - len(suffix)]
            return base + repl if _measure(base) > min_m else word
    return word


_STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
    ("izer", "ize"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"),
    ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
    ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
    ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"),
)  # fmt: skip
_STEP3 = (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"),
    ("ical", "ic"), ("ful", ""), ("ness", ""),
)  # fmt: skip
_STEP4 = (
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
    "ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
)  # fmt: skip


def _step1(word: str) -> str:
    if _ends(word, "sses") or _ends(word, "ies"):
        word = word[:-2]
    elif word.endswith("ss"):
        pass
    elif word.endswith("s"):
        word = word[:-1]
    fix = False
    if _ends(word, "eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    elif _ends(word, "ed"):
        if _has_vowel(word[:-2]):
            word, fix = word[:-2], True
    elif _ends(word, "ing") and _has_vowel(word[:-3]):
        word, fix = word[:-3], True
    if fix:
        if _ends(word, "at") or _ends(word, "bl") or _ends(word, "iz"):
            word += "e"
        elif _double_cons(word) and word[-1] not in "lsz":
            word = word[:-1]
        elif _measure(word) == 1 and _cvc(word):
            word += "e"
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


_STEP4_LONGEST_FIRST = tuple(sorted(_STEP4, key=len, reverse=True))


def _step4(word: str) -> str:
    for suffix in _STEP4_LONGEST_FIRST:
        if word.endswith(suffix) and len(word) > len(suffix):  # _ends, inlined: hot
            base = word[: len(word) - len(suffix)]
            if _measure(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
                return base
            return word
    return word


def _step5(word: str) -> str:
    if word.endswith("e"):
        base = word[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not _cvc(base)):
            word = base
    if word.endswith("ll") and _measure(word[:-1]) > 1:
        word = word[:-1]
    return word


def _stem(word: str) -> str:
    """The Porter stem of a lower-case word, computed."""
    if not 2 < len(word) <= 64 or not word.isascii():
        return word
    word = _step1(word)
    word = _replace(word, _STEP2, 0)
    word = _replace(word, _STEP3, 0)
    word = _step4(word)
    return _step5(word)


class _Stems(dict[str, str]):
    """Word -> stem, filled on a miss; forgotten all at once past :data:`KEPT` words
    (a few MB).  A number is its own stem and is not kept: a store's numbers (ids,
    counts, dates) would push its words out."""

    KEPT = 65536

    def __missing__(self, word: str) -> str:
        if word.isdigit():
            return word
        if len(self) >= self.KEPT:
            self.clear()
        stemmed = self[word] = _stem(word)
        return stemmed


STEMS = _Stems()


def stem(word: str) -> str:
    """The Porter stem of a lower-case word; words of one or two letters, or longer than
    64, stay as they are (as in FTS5), and so does a number (no step of the algorithm
    changes a word of digits)."""
    return STEMS[word]
