"""Run the rules over a text: one prefilter pass, then only the rules it names.

The prefilter (:mod:`.cues`) finds the text's cue words.  A text with no cue word
costs that and a lower-casing; a text with some runs only the rules whose cues it
holds.

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from . import gitleaks
from .cues import Index, cue_index, cues_in
from .rules import RULES, Rule

__all__ = [
    "Redacted",
    "redact",
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
    """The findings of ``spec`` in ``text``, whose gate the caller found in it."""
    _, global_allow = gitleaks.specs()
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
    index = cue_index()
    own = {i for cue in cues for i in index.own.get(cue, ())}
    specs, _ = gitleaks.specs()
    leaks = sorted({i for cue in cues for i in index.leaks.get(cue, ())} | set(index.always))
    return (
        tuple(rule for i, rule in enumerate(RULES) if not rule.cues or i in own),
        tuple(specs[i] for i in leaks),
    )


def _candidates(
    text: str, lowered: str, cues: set[str], index: Index
) -> Iterator[tuple[str, int, int]]:
    """(type, start, end) of every match, in rule order."""
    rules, specs = _plan(frozenset(cues), id(RULES))
    for rule in rules:
        if not rule.holds_needs(lowered):
            continue
        if not rule.holds_gate(lowered):
            continue
        for start, end in _own_spans(rule, text):
            yield rule.type, start, end
    for spec in specs:
        gate = spec.gate
        if gate is not None and gate.search(text) is None:
            continue
        for start, end in _gitleaks_spans(spec, text):
            yield spec.id, start, end


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, type) of every secret the rules recognise in ``text``, in order."""
    index = cue_index()
    lowered = text.lower() if text.isascii() else text.translate(_CASE_TWINS).lower()
    cues = cues_in(lowered, index)
    if not cues:
        return []  # cheap: most texts hold no cue word at all
    return _spans(text, lowered, cues, index)


def _spans(text: str, lowered: str, cues: set[str], index: Index) -> list[tuple[int, int, str]]:
    """:func:`secret_spans` of ``text`` once its cues are known."""
    taken: list[tuple[int, int, str | None]] = []
    if "[redacted:" in lowered:
        taken = [(m.start(), m.end(), None) for m in _EXISTING.finditer(text)]
    for type_, start, end in _candidates(text, lowered, cues, index):
        if all(end <= s or start >= e for s, e, _ in taken):
            taken.append((start, end, type_))
    if not taken:
        return []  # the common case: cue words, no secret
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
    index = cue_index()
    cues = cues_in(lowered, index)
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
