"""The prefilter of the redaction rules: which rules a text's cue words wake.

One regular expression over every rule's cue words (ours and the gitleaks
keywords), built as a trie so the engine tests one branch per character; per cue
word, the rules it wakes.  :func:`cues_in` finds a text's cue words by its words,
remembering the words that hold none; :func:`cues_scan`, one scan of the whole
text, is the plain path it is tested against.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from . import gitleaks
from .rules import RULES

__all__ = ["Index", "cue_index", "cues_in", "cues_scan"]


def _trie_pattern(words: Iterable[str]) -> str:
    """One alternation over ``words`` as a trie: longer words tried before their prefixes."""
    trie: dict[str, dict[str, object]] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})  # type: ignore[assignment]
        node[""] = {}

    def emit(node: dict[str, dict[str, object]]) -> str:
        branches = [re.escape(c) + emit(child) for c, child in sorted(node.items()) if c]  # type: ignore[arg-type]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return "(?:" + body + ")?" if "" in node else body

    return emit(trie)


@dataclass(frozen=True)
class Index:
    """The prefilter and, per cue word, the rules it wakes."""

    prefilter: re.Pattern[bytes]
    contained: dict[bytes, frozenset[str]]  # cue -> the cues it holds (itself included)
    own: dict[str, tuple[int, ...]]  # cue -> indices into RULES
    leaks: dict[str, tuple[int, ...]]  # cue -> indices into gitleaks.specs()
    always: tuple[int, ...]  # gitleaks rules with no keywords
    unworded: tuple[tuple[str, frozenset[str]], ...]
    """The cues the word lookup cannot find, with the cues each holds: those that hold
    whitespace (``private key``) and those with no ASCII letter (``://``)."""


@functools.cache
def cue_index() -> Index:
    specs, _ = gitleaks.specs()
    own: dict[str, list[int]] = {}
    leaks: dict[str, list[int]] = {}
    for i, rule in enumerate(RULES):
        for cue in rule.cues:
            own.setdefault(cue, []).append(i)
    for i, spec in enumerate(specs):
        for cue in spec.keywords:
            leaks.setdefault(cue, []).append(i)
    cues = set(own) | set(leaks)
    return Index(
        prefilter=re.compile(_trie_pattern(cues).encode("ascii")),
        contained={c.encode("ascii"): frozenset(d for d in cues if d in c) for c in cues},
        own={c: tuple(v) for c, v in own.items()},
        leaks={c: tuple(v) for c, v in leaks.items()},
        always=tuple(i for i, spec in enumerate(specs) if not spec.keywords),
        unworded=tuple(
            (c, frozenset(d for d in cues if d in c))
            for c in sorted(cues)
            if any(ch.isspace() for ch in c) or not _LETTER.search(c)
        ),
    )


def cues_in(lowered: str, index: Index) -> set[str]:
    """Every cue word that occurs in ``lowered``, overlapping ones included: what
    :func:`cues_scan` finds, looked up word by word.

    Every cue but those of :attr:`Index.unworded` (searched in the whole text with
    ``in``) holds an ASCII letter and no whitespace, so it lies inside one
    whitespace-separated word that holds a letter.  The cues of a word are remembered
    (:data:`_CUED`, and the words with none in :data:`_WORDS`): memory texts are mostly
    the same few thousand words, and a text of known words costs a split and two set
    operations in C (the known words that hold cues, and the words not known), where
    the scan costs a trie step per character.  The words not seen before that hold a
    letter (not "12:" or "#42)") are scanned together, in one pass.
    """
    found: set[str] = set()
    words = set(lowered.split())
    cued = _CUED
    for word in cued.keys() & words:  # a set in C, iterating the smaller side
        found |= cued.get(word, frozenset())  # one emptied meanwhile is learned again below
    missed = words.difference(_WORDS, cued)
    if missed:
        letters = _LETTER.search
        unseen = [word for word in missed if letters(word)]
        if unseen:
            found |= _learn(unseen, index)
    for cue, holds in index.unworded:
        if cue in lowered:
            found |= holds
    return found


_WORDS: set[str] = set()
"""Lower-cased words known to hold no cue: up to 32 characters with no digit."""
_CUED: dict[str, frozenset[str]] = {}
"""Per lower-cased word that holds cues, the cues it holds: letters only (trailing
punctuation aside: "tokens,"), up to 32 characters.  The two memos are apart, so that
each alone says all it knows: a word in neither (one memo emptied, by
:data:`_WORDS_MAX` or a benchmark, or another thread halfway through :func:`_learn`)
is learned again, never taken for a word without cues.  Both are emptied when they
reach :data:`_WORDS_MAX` together."""
_WORDS_MAX = 1 << 15
_NO_DIGIT = re.compile(r"[^0-9]{1,32}")
_LETTER = re.compile(r"[a-z]")
_PUNCTUATION = ".,;:!?()[]\"'`"


def _learn(words: list[str], index: Index) -> set[str]:
    """The cues of ``words`` (one scan of them joined by newlines: no cue holds one),
    remembering those of the words :data:`_CUED` or :data:`_WORDS` keeps."""
    parts = [word.encode("utf-8", "surrogatepass") for word in words]
    starts: list[int] = []
    at = 0
    for part in parts:
        starts.append(at)
        at += len(part) + 1
    per: dict[int, set[str]] = {}
    for start, holds in _scan(b"\n".join(parts), index):
        per.setdefault(bisect.bisect_right(starts, start) - 1, set()).update(holds)
    if len(_WORDS) + len(_CUED) + len(words) > _WORDS_MAX:
        _WORDS.clear()
        _CUED.clear()
    found: set[str] = set()
    for i, word in enumerate(words):
        cues = per.get(i, set())
        if cues:
            found |= cues
            if len(word) <= 32 and word.strip(_PUNCTUATION).isalpha():
                _CUED[word] = frozenset(cues)
        elif _NO_DIGIT.fullmatch(word):
            _WORDS.add(word)
    return found


def _scan(data: bytes, index: Index) -> Iterator[tuple[int, frozenset[str]]]:
    """(start, cues) of every place in ``data`` where a cue starts, overlapping ones too.

    The scan runs over UTF-8 bytes (about twice as fast as over ``str``); the cues are
    ASCII, and no byte of a multi-byte UTF-8 character is ASCII, so the same cues are
    found.
    """
    prefilter = index.prefilter
    for match in prefilter.finditer(data):
        yield match.start(), index.contained[match.group()]
        for start in range(match.start() + 1, match.end()):  # a cue starting inside this one
            inner = prefilter.match(data, start)
            if inner:
                yield start, index.contained[inner.group()]


def cues_scan(lowered: str, index: Index) -> set[str]:
    """Every cue word in ``lowered`` by one scan of the whole text (the reference)."""
    found: set[str] = set()
    for _, cues in _scan(lowered.encode("utf-8", "surrogatepass"), index):
        found |= cues
    return found
