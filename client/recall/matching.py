"""Which memories match a query, and what one recall may return (pure).

The matching rule, once.  A memory *matches* a query when it holds a query term that
is not one of the memory's names: the speaker a memory's text begins with (a turn
written ``"Caroline: ..."``) and its author's names in the roster do not make it
match, nor do stop words (they are never query terms, :func:`.ranking.analyse_query`).
When the query holds nothing but such names (``recall redis`` of ``"Redis: 7.2 ..."``),
they are all it asks: a memory holding every one of them matches.  A word held as
the start of a longer one counts (``postgres`` in ``PostgreSQL``), and so does a
match in a replaced version (``include_history``).  The seam for meaning: a
similarity (0..1) at or above ``threshold`` also makes a memory match
(:func:`matches`; ``recall.search`` takes a function that gives it).

A query that names someone or something (proper nouns: capitalised inside the
sentence) of which the store has never heard any (no memory holds one, no roster names
one) asks about what is not there: nothing matches it (:func:`unheard`).  "What did Caroline
say about the move?" asked of a store where no Caroline ever appears is not answered
by what someone else said about a move.

What a recall returns (:func:`select`).  Context, recency and importance re-rank the
matching memories; a memory that matches nothing never comes before one that does.
A neighbour of a strong match (a hit whose session neighbours recall reads) that
ranks among the best ``k`` but matches nothing may stay, at most
:data:`MAX_RELATED` of them, marked ``related`` and placed after the ``k`` best
matches (so a recall of ``k`` shows at most ``k`` + 2; a match is never dropped for
one, and the agent sees them: they count in hit@k); other non-matching candidates are
dropped.  Nothing matches: nothing is returned, and
:func:`nothing_close` says why in words every surface (CLI, MCP, viewer) uses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from ..store.scripts import is_run
from ..store.terms import parse_stems, stems_of
from .ranking import QueryTerm, analyse_query, is_date_word, prefix_mask, term_mask, tokens
from .sql import Row

__all__ = [
    "MAX_RELATED",
    "SIMILARITY_THRESHOLD",
    "Held",
    "matches",
    "names_of",
    "nothing_close",
    "select",
    "speaker",
    "unheard",
]

MAX_RELATED = 2
SIMILARITY_THRESHOLD = 1.0  # no similarity is measured yet: none clears it by default

# "Caroline: ..." a capitalised word and a colon open the text: who speaks; in a script
# without spaces (no capitals), a short run before a colon, full-width or not: "小明：..."
_SPEAKER_RE = re.compile(r"\s*(?:([A-Z][\w'-]{0,31}):\s|([^\W\d_]{1,8})[:\uff1a])")


def speaker(content: str) -> str | None:
    """The speaker a memory's text begins with (``"Caroline: I went ..."``,
    ``"小明：我去了..."``), or None."""
    found = _SPEAKER_RE.match(content)
    if found is None:
        return None
    if found.group(1) is not None:
        return found.group(1)
    return found.group(2) if is_run(found.group(2)) else None


def names_of(content: str, author_names: Iterable[str] = ()) -> frozenset[str]:
    """The stems of a memory's names: its speaker and its author's roster names."""
    said = speaker(content)
    names = [said] if said else []
    names.extend(author_names)
    return stems_of(" ".join(names)) if names else frozenset()


def unheard(
    terms: Sequence[QueryTerm], df: Mapping[str, int], roster: Iterable[Iterable[str]]
) -> bool:
    """Whether the query names someone or something (proper nouns other than month
    names) and none of them is known: no memory holds it (``df``: documents per stem, a
    word held as a prefix counted) and it names no member (``roster``: each member's
    names)."""
    named = [t.stem for t in terms if t.entity and not is_date_word(t.word)]
    if not named or any(df.get(stem) for stem in named):
        return False
    known = stems_of(" ".join(name for names in roster for name in names))
    return not known.intersection(named)


def nothing_close(query: str) -> str:
    """Why a recall of ``query`` found nothing, as a clause after "nothing close to
    <query>": no word at all, only common words (stop words are no query terms), or no
    memory holding any of its words."""
    if analyse_query(query):  # an emoji is a term too, though no unicode61 token
        return "no memory shares a word with it"
    if not tokens(query):
        return "it holds no word to look for"
    return "it has only common words (like 'the' or 'what'); add one that names what you want"


def matches(
    held: int,
    names: int,
    every: int,
    similarity: float | None = None,
    threshold: float = SIMILARITY_THRESHOLD,
) -> bool:
    """The matching rule (the module's docstring): ``held`` has bit ``i`` when the memory
    holds the query's ``i``-th term, ``names`` when that term is one of its names,
    ``every`` all the query's terms; ``similarity`` (None: not measured) counts when it
    reaches ``threshold``."""
    if held & ~names:
        return True
    if held and held & every == every:  # the query asks only for names, all held
        return True
    return similarity is not None and similarity >= threshold


def select(
    ranked: Iterable[int],
    matching: Collection[int],
    near_strong: Callable[[int], bool],
    k: int,
    within: int | None = None,
) -> list[tuple[int, bool]]:
    """``(candidate, related)`` from ``ranked`` (best first): the best ``k`` matching
    ones in their order, then at most :data:`MAX_RELATED` non-matching ones among the
    best ``within`` (``k`` unless given) that ``near_strong`` (a neighbour of a strong
    match), in theirs, after every match: a related result never takes the slot of a
    match; empty when nothing matches."""
    within = k if within is None else min(k, within)
    found: list[int] = []
    related: list[int] = []
    for rank, candidate in enumerate(ranked):
        if len(found) >= k and (rank >= within or len(related) >= MAX_RELATED):
            break
        if candidate in matching:
            if len(found) < k:
                found.append(candidate)
        elif rank < within and len(related) < MAX_RELATED and near_strong(candidate):
            related.append(candidate)
    if not found:
        return []
    return [(c, False) for c in found] + [(c, True) for c in related]


class Held:
    """What each candidate holds of the query: its term mask, the terms it holds only as
    a prefix, and whether it matches (:func:`matches`).  A term of ``whole`` (one
    character of a gram run) held as a prefix is held: its bigram holds the character."""

    def __init__(
        self,
        stems: list[str],
        prefixed: int,
        extensions: list[frozenset[str] | None],
        names: Mapping[str, Sequence[str]],
    ) -> None:
        self.stems, self.prefixed, self.extensions, self.names = stems, prefixed, extensions, names
        self.every = (1 << len(stems)) - 1
        self.whole = sum(1 << i for i, stem in enumerate(stems) if len(stem) == 1 and is_run(stem))
        self.masks: dict[int, int] = {}
        self.partial: dict[int, int] = {}
        self.matching: set[int] = set()

    def read(self, rows: dict[int, Row], from_history: set[int]) -> None:
        for rowid, row in rows.items():
            if rowid in self.masks:
                continue
            stored = row[10]
            held = stems_of(f"{row[6]} {row[7]}") if stored is None else parse_stems(stored)
            mask = term_mask(self.stems, held)
            if self.prefixed & ~mask:
                longer = prefix_mask(self.extensions, held) & ~mask
                mask |= longer & self.whole  # one character inside a bigram: held
                self.partial[rowid] = longer & ~self.whole
            self.masks[rowid] = mask
            found = mask | self.partial.get(rowid, 0)
            own = names_of(row[6], self.names.get(row[9], (row[9],)))
            names = term_mask(self.stems, own) if own else 0
            if rowid in from_history or matches(found, names, self.every):
                self.matching.add(rowid)
