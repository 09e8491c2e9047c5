"""Run the rules over a text: one prefilter pass, then only the rules it names.

The prefilter is one regular expression over every rule's cue words (ours and
the gitleaks keywords), built as a trie so the engine tests one branch per
character.  A text with no cue word costs that one scan and a lower-casing;
a text with some runs only the rules whose cues it holds.

Every rule reports spans on the original text.  Rules are taken in order (ours
first, most specific first, then gitleaks' in file order); a span overlapping
one already taken, or a placeholder already in the text, is dropped.  So a JWT
inside a bearer header is one ``jwt``, and redacting twice changes nothing.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from . import gitleaks
from .rules import RULES, Rule

__all__ = [
    "Redacted",
    "redact",
    "redact_all",
    "redact_many",
    "rules_fingerprint",
    "secret_spans",
    "warning_for",
]

_EXISTING = re.compile(r"\[REDACTED:[\w.-]+\]")

# The non-ASCII letters that re.IGNORECASE matches to an ASCII one (dotted capital I,
# dotless i, long s, Kelvin sign): folded before the cue check, or "paſſword=..."
# would skip the rule its pattern matches.
_CASE_TWINS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


@dataclass(frozen=True)
class Redacted:
    """Cleaned text and how many secrets of each type were replaced."""

    text: str
    found: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.found)


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
class _Index:
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
def _index() -> _Index:
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
    return _Index(
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


def _cues_in(lowered: str, index: _Index) -> set[str]:
    """Every cue word that occurs in ``lowered``, overlapping ones included: what
    :func:`_cues_scan` finds, looked up word by word.

    Every cue but those of :attr:`_Index.unworded` (searched in the whole text with
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


def _learn(words: list[str], index: _Index) -> set[str]:
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


def _scan(data: bytes, index: _Index) -> Iterator[tuple[int, frozenset[str]]]:
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


def _cues_scan(lowered: str, index: _Index) -> set[str]:
    """Every cue word in ``lowered`` by one scan of the whole text (the reference)."""
    found: set[str] = set()
    for _, cues in _scan(lowered.encode("utf-8", "surrogatepass"), index):
        found |= cues
    return found


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    if "secret" in match.re.groupindex:
        return match.span("secret")
    for group in range(1, (match.re.groups or 0) + 1):
        start, end = match.span(group)
        if end > start:
            return start, end
    return match.span()


def _line(text: str, start: int, end: int) -> str:
    return text[text.rfind("\n", 0, start) + 1 : (text.find("\n", end) + 1 or len(text) + 1) - 1]


def _own_spans(rule: Rule, text: str) -> Iterator[tuple[int, int]]:
    for match in rule.pattern.finditer(text):
        start, end = _secret_span(match)
        if end > start and (rule.accept is None or rule.accept(text[start:end])):
            yield start, end


def _gitleaks_spans(spec: gitleaks.Spec, text: str) -> Iterator[tuple[int, int]]:
    _, global_allow = gitleaks.specs()
    if spec.gate is not None and spec.gate.search(text) is None:
        return
    for match in spec.finditer(text):
        start, end = _secret_span(match)
        if end > start and spec.accepts(
            text[start:end], match.group(), _line(text, *match.span()), global_allow
        ):
            yield start, end


@functools.lru_cache(maxsize=1024)
def _plan(
    cues: frozenset[str], rules_id: int
) -> tuple[tuple[Rule, ...], tuple[gitleaks.Spec, ...]]:
    """The rules a set of cues wakes, in rule order (ours, then gitleaks').  The same few
    cue sets come back text after text.  ``rules_id`` is ``id(RULES)``: a rule set
    swapped in (a benchmark's baseline) gets plans of its own."""
    index = _index()
    own = {i for cue in cues for i in index.own.get(cue, ())}
    specs, _ = gitleaks.specs()
    leaks = sorted({i for cue in cues for i in index.leaks.get(cue, ())} | set(index.always))
    return (
        tuple(rule for i, rule in enumerate(RULES) if not rule.cues or i in own),
        tuple(specs[i] for i in leaks),
    )


def _candidates(
    text: str, lowered: str, cues: set[str], index: _Index
) -> Iterator[tuple[str, int, int]]:
    """(type, start, end) of every match, in rule order."""
    rules, specs = _plan(frozenset(cues), id(RULES))
    for rule in rules:
        needs = rule.needs_pattern
        if needs is not None and needs.search(lowered) is None:
            continue
        gate = rule.gate_pattern
        if gate is not None and gate.search(lowered) is None:
            continue
        for start, end in _own_spans(rule, text):
            yield rule.type, start, end
    for spec in specs:
        for start, end in _gitleaks_spans(spec, text):
            yield spec.id, start, end


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, type) of every secret the rules recognise in ``text``, in order."""
    index = _index()
    lowered = text.lower() if text.isascii() else text.translate(_CASE_TWINS).lower()
    cues = _cues_in(lowered, index)
    if not cues:
        return []  # cheap: most texts hold no cue word at all
    return _spans(text, lowered, cues, index)


def _spans(text: str, lowered: str, cues: set[str], index: _Index) -> list[tuple[int, int, str]]:
    """:func:`secret_spans` of ``text`` once its cues are known."""
    taken: list[tuple[int, int, str | None]] = []
    if "[redacted:" in lowered:
        taken = [(m.start(), m.end(), None) for m in _EXISTING.finditer(text)]
    for type_, start, end in _candidates(text, lowered, cues, index):
        if all(end <= s or start >= e for s, e, _ in taken):
            taken.append((start, end, type_))
    return sorted((s, e, t) for s, e, t in taken if t is not None)


def redact(text: str) -> Redacted:
    """Replace every secret the rules recognise in ``text`` with ``[REDACTED:<type>]``."""
    return _replace(text, secret_spans(text))


def _replace(text: str, spans: list[tuple[int, int, str]]) -> Redacted:
    if not spans:
        return Redacted(text)
    parts: list[str] = []
    pos = 0
    for start, end, type_ in spans:
        parts += [text[pos:start], f"[REDACTED:{type_}]"]
        pos = end
    parts.append(text[pos:])
    return Redacted("".join(parts), dict(Counter(t for _, _, t in spans)))


def redact_many(texts: Sequence[str]) -> dict[int, Redacted]:
    """:func:`redact` of each of ``texts``, for those it changes: ``{position: result}``
    (a text not named holds nothing the rules recognise).

    What :func:`redact` finds, for much less per clean text: the cue words are looked up
    once for the whole batch (the texts joined by newlines, lower-cased, split once), and
    each cue the batch holds is found in the joined text by ``str.find`` (every
    occurrence, overlapping ones too), which names the texts that hold it.  The rules
    run over those texts only, with the cues found there; a text with no cue costs its
    share of the join, the lower-casing and the split.  A cue never holds a newline, so
    the join makes none up.  When lower-casing changes the joined text's length (a
    character that lower-cases to two), the texts are redacted one by one."""
    if not texts:
        return {}
    joined = "\n".join(texts)
    lowered = joined.lower() if joined.isascii() else joined.translate(_CASE_TWINS).lower()
    if len(lowered) != len(joined):
        each = {i: _replace(text, secret_spans(text)) for i, text in enumerate(texts)}
        return {i: result for i, result in each.items() if result.found}
    index = _index()
    cues = _cues_in(lowered, index)
    if not cues:
        return {}
    starts: list[int] = []
    at = 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    per: dict[int, set[str]] = {}
    find, where = lowered.find, bisect.bisect_right
    for cue in cues:
        pos = find(cue)
        while pos != -1:
            i = where(starts, pos) - 1
            per.setdefault(i, set()).add(cue)
            pos = find(cue, pos + 1)
    out: dict[int, Redacted] = {}
    for i, held in sorted(per.items()):
        text = texts[i]
        begin = starts[i]
        spans = _spans(text, lowered[begin : begin + len(text)], held, index)
        if spans:
            out[i] = _replace(text, spans)
    return out


def redact_all(texts: Iterable[str]) -> tuple[list[str], dict[str, int]]:
    """Redact several texts; return them and the summed counts per type."""
    total: Counter[str] = Counter()
    out: list[str] = []
    for text in texts:
        result = redact(text)
        out.append(result.text)
        total.update(result.found)
    return out, dict(total)


@functools.cache
def _labels() -> dict[str, str]:
    labels = {spec.id: f"gitleaks {spec.id} secret" for spec in gitleaks.specs()[0]}
    labels.update({rule.type: rule.label for rule in RULES})
    return labels


def warning_for(found: dict[str, int], where: str = "content") -> list[str]:
    """One warning per secret type found, naming the type and count, never the secret."""
    labels = _labels()
    return [
        f"redacted {count} {labels.get(type_, type_)}{'s' if count > 1 else ''} from the "
        f"{where} (replaced with [REDACTED:{type_}]); keep secrets in a secret manager, "
        "not in memories"
        for type_, count in sorted(found.items())
    ]


def rules_fingerprint() -> str:
    """12 hex digits over our rules' patterns and the gitleaks data file."""
    import hashlib
    from importlib import resources

    digest = hashlib.sha256()
    for rule in RULES:
        digest.update(
            f"{rule.type}\0{rule.source}\0{rule.flags}\0{rule.needs}\0{rule.gate}\0".encode()
        )
    digest.update(resources.files(gitleaks.__package__).joinpath("gitleaks.toml").read_bytes())
    return digest.hexdigest()[:12]
