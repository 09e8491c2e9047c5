"""Near-duplicate memories: when two texts say the same thing, and grouping results.

Two memories are near-duplicates when the sets of their content stems (the Porter
stems the index holds, :func:`..store.terms.stems_of`, without stop words, numbers
kept; negations and words of direction such as "not" or "before" are kept) overlap by
at least :data:`THRESHOLD` (Jaccard: shared stems over all stems) and share at least
:data:`MIN_SHARED` of them, unless they differ where it matters: other numbers (a rate
limit of 100 against one of 500) or the two halves of an opposite pair ("before" in
one, "after" in the other).  A reworded repeat and the same lesson
written by two teammates reuse most of their content words in another order, which
word order (shingles of two or more words) would miss; two different memories on one
subject share the subject's words and little else.  The threshold was chosen on
``tests/bench/data/dupes.json`` (``tests/bench/bench_dupes.py``; figures in
``tests/bench/README.md``).

Grouping runs on results already ranked (:func:`group`): each item joins the first
group whose leader it duplicates, else leads a group of its own, so the best-ranked
member leads and nothing is hidden: every member is kept in its group.  A superseded
memory is never grouped: it stays beside its correction with its own mark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..store.memory import Memory
from ..store.terms import stems_of
from .stopwords import STOP_WORDS

__all__ = [
    "MIN_SHARED",
    "THRESHOLD",
    "Group",
    "group",
    "near_duplicates",
    "shown",
    "signature",
    "similarity",
    "stands_alone",
]

THRESHOLD = 0.45
"""Jaccard over content stems at or above which two memories are one lesson."""

MIN_SHARED = 3
"""Two texts sharing fewer content stems than this (not counting the kept stop words)
are never one lesson (short notes)."""

_KEPT = frozenset((
    "no", "nor", "not", "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "hasn",
    "haven", "hadn", "won", "wouldn", "shouldn", "couldn", "mustn", "needn", "shan",
    "mightn", "before", "after", "above", "below", "up", "down", "on", "off", "over",
    "under", "again", "against", "more", "most", "few", "only", "same",
))  # fmt: skip
"""Stop words that change what a memory says ("not", "before"): compared, never dropped."""

_KEPT_STEMS = frozenset(s for word in _KEPT for s in stems_of(word))
_STOP_STEMS = frozenset(s for word in STOP_WORDS - _KEPT for s in stems_of(word)) - _KEPT_STEMS

_OPPOSITES = [
    (frozenset(stems_of(a)), frozenset(stems_of(b)))
    for a, b in (
        ("before", "after"), ("above", "below"), ("up", "down"), ("on", "off"),
        ("over", "under"), ("enable", "disable"), ("enabled", "disabled"), ("allow", "deny"),
        ("always", "never"), ("true", "false"), ("start", "stop"), ("open", "close"),
        ("add", "remove"), ("increase", "decrease"), ("more", "less"), ("most", "least"),
        ("first", "last"), ("min", "max"), ("minimum", "maximum"), ("old", "new"),
        ("older", "newer"), ("higher", "lower"), ("faster", "slower"), ("public", "private"),
        ("success", "failure"), ("accept", "reject"), ("include", "exclude"), ("yes", "no"),
    )
]  # fmt: skip
"""Word pairs whose halves, one in each text, make two memories say different things."""

T = TypeVar("T")


def signature(text: str) -> frozenset[str]:
    """The content stems of ``text`` that :func:`similarity` compares."""
    return frozenset(s for s in stems_of(text) if s not in _STOP_STEMS)


def _apart(a: frozenset[str], b: frozenset[str]) -> bool:
    """Two texts that differ where it matters: other numbers, when both name some
    (``100`` against ``500``; ``note 3 about 3`` against ``note 100 about 3``: a number
    one names and the other does not is a difference too), or the two halves of an
    opposite pair (``before`` in one, ``after`` in the other)."""
    num_a = {s for s in a if any(ch.isdigit() for ch in s)}
    num_b = {s for s in b if any(ch.isdigit() for ch in s)}
    if num_a and num_b and num_a != num_b:
        return True
    only_a, only_b = a - b, b - a
    return any(
        (x <= only_a and y <= only_b) or (y <= only_a and x <= only_b) for x, y in _OPPOSITES
    )


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard of two signatures; 0 when they share fewer than :data:`MIN_SHARED` stems or
    differ where it matters (other numbers, opposite words)."""
    both = a & b
    if len(both - _KEPT_STEMS) < MIN_SHARED or _apart(a, b):
        return 0.0
    return len(both) / len(a | b)


def near_duplicates(a: str, b: str, threshold: float = THRESHOLD) -> bool:
    """Whether texts ``a`` and ``b`` say the same thing (see the module doc)."""
    return similarity(signature(a), signature(b)) >= threshold


def stands_alone(memory: Memory, superseded: bool) -> bool:
    """Whether nothing may group with ``memory``: it is ``superseded`` (it differs from its
    correction by what was wrong), or it supersedes another (a correction, or a teammate's
    proposed replacement, says something else on purpose, however close its words)."""
    return superseded or bool(memory.record.supersedes)


@dataclass(frozen=True)
class Group(Generic[T]):
    """One entry of grouped results: the best-ranked member, then the others in rank order."""

    leader: T
    others: list[T] = field(default_factory=list)

    @property
    def members(self) -> list[T]:
        return [self.leader, *self.others]


def group(
    items: Sequence[T],
    text: Callable[[T], str],
    threshold: float = THRESHOLD,
    alone: Callable[[T], bool] | None = None,
) -> list[Group[T]]:
    """``items`` (best first) in groups of near-duplicates, each led by its best-ranked
    member, in the order of their leaders; every item is in exactly one group.  An item
    ``alone`` says so of (a superseded memory: it differs from its correction by what
    was wrong, and carries its own mark) is a group of its own that nothing joins."""
    groups: list[tuple[frozenset[str] | None, Group[T]]] = []
    for item in items:
        if alone is not None and alone(item):
            groups.append((None, Group(item)))
            continue
        sig = signature(text(item))
        for lead_sig, found in groups:
            if lead_sig is not None and similarity(sig, lead_sig) >= threshold:
                found.others.append(item)
                break
        else:
            groups.append((sig, Group(item)))
    return [g for _, g in groups]


def shown(groups: Sequence[Group[T]], k: int, related: Callable[[T], bool]) -> list[Group[T]]:
    """What one recall of ``k`` shows of ``groups`` (best first): the first ``k`` groups
    led by a match, then those led by a ``related`` result (a recall returns at most
    two, after its matches: :func:`.matching.select`)."""
    matched = [g for g in groups if not related(g.leader)]
    return matched[:k] + [g for g in groups if related(g.leader)]
