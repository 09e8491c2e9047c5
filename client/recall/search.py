"""Recall: find and rank the memories that answer a query (DESIGN §7).

:func:`search` takes BM25 candidates from the FTS5 index, then re-ranks them in
Python with the features of :mod:`sealmem.client.recall.ranking`; every component of
a score is returned in ``Scored.why``.  Tombstones never come back; superseded
memories are demoted, never hidden.  The connection is the store's: this
module only reads (the queries are in :mod:`sealmem.client.recall.sql`).

Sessions.  Session context links a memory to memories written in the same
session: an origin ``"<tool>:<session id>"`` (:mod:`sealmem.client.recall.sessions`
says which write paths give one) links memories of the same project within
``context_gap_ms``; a bare origin (``"cli"``, ``"import"``) links only those of the
same author within ``session_gap_ms`` (two memories a teammate wrote an hour apart
are not one session).

Cost.  A recall is a handful of round trips on the common path: the term
statistics (cached per connection until the database changes; the counts of
frequent terms are read from the store's ``term_counts``, the others walked in
the index), how much of the store the scope holds, one BM25 pool (the index ranked
alone, then the rows of its best matches; or, for a scope that holds fewer than
half the memories, ranked with the scope inside), the pool of the period the query
names (only when it names one) and one query for the session neighbours of the strong
matches.
A candidate's stems are read with its row (``memories.stems``; a row another tool
wrote without them is stemmed here, once per text, cached); the score
of each candidate is arithmetic over a bit mask of the query terms it holds, and the ``why``
dictionary is built for the ``k`` results only.  The pool is bounded twice:
``pool`` candidates, drawn from the rarest terms while their document counts
fit ``pool_postings`` (terms left out still count in coverage and context).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from ..store.scripts import is_run
from . import semantic
from .frequencies import document_frequencies
from .matching import Held, select, unheard
from .names import author_names
from .ranking import (
    DAY_MS,
    QueryTerm,
    RankingWeights,
    Span,
    analyse_query,
    date_spans,
    fts_phrase,
    is_date_word,
    is_session_origin,
    term_shares,
)
from .scoring import Scorer
from .sql import (
    LIVE,
    Row,
    Scope,
    bm25_pool,
    fetch,
    history_pool,
    narrow_scope,
    neighbours,
    newest_in,
)

__all__ = ["DEFAULT_WEIGHTS", "Pool", "Scored", "pool_plan", "search"]

DEFAULT_WEIGHTS = RankingWeights()
_AND_SPAN = 4  # the AND pool reads words of up to this many times pool_postings
_NAMES = (
    "bm25", "coverage", "entity", "context", "date", "recency", "importance", "superseded"
)  # fmt: skip


@dataclass(frozen=True)
class Scored:
    """One ranked memory: its id, its score, the score's parts (they sum to it), and
    whether it is only related (see :mod:`sealmem.client.recall.matching`)."""

    id: str
    score: float
    why: dict[str, float]
    related: bool = False  # matches nothing: a session neighbour of a strong match


@dataclass(frozen=True)
class Pool:
    """One FTS5 candidate query: its phrases, OR-ed or AND-ed, best BM25 or newest first."""

    phrases: tuple[str, ...]
    every: bool = False  # AND the words (memories holding all of them)
    newest: bool = False  # the newest matches rather than the best BM25 ones

    @property
    def expression(self) -> str:
        return (" AND " if self.every else " OR ").join(self.phrases)


def pool_plan(
    terms: Sequence[QueryTerm],
    phrases: Sequence[str],
    df: dict[str, int],
    n_docs: int,
    weights: RankingWeights,
) -> list[Pool]:
    """The FTS5 queries that draw the candidates; their cost stays bounded.

    FTS5 computes BM25 for every matching row before it can sort, so the main pool
    ORs the words rarest first among those in at most ``common_share`` of the
    memories (or in no more than ``pool`` of them: in a small store), while their
    document counts add up to at most ``pool_postings``.
    The words left out are not lost: the memories holding *all* the eligible words
    of up to four times the budget each form a second pool (an AND; newest first
    when even its rarest word is over the budget), and every query word counts in
    coverage.  When no word fits the budget, the newest memories holding the rarest
    word stand in for the main pool; when every word it ORs is a name, the newest
    memories holding the rarest other word join it (a name alone makes no match)."""
    present = sorted((df[t.stem], i) for i, t in enumerate(terms) if df[t.stem] > 0)
    if not present:
        return []
    budget = weights.pool_postings
    # a word held by no more memories than a pool takes is never too common to draw them
    common = max(n_docs * weights.common_share, weights.pool)
    eligible = [(d, i) for d, i in present if d <= common] or present
    chosen: list[int] = []
    postings = 0
    for d, i in eligible:
        if postings + d > budget:
            break
        chosen.append(i)
        postings += d
    pools = [Pool(tuple(phrases[i] for i in sorted(chosen)))] if chosen else []
    joint = [i for d, i in eligible if d <= _AND_SPAN * budget]
    if len(joint) > 1 and set(joint) - set(chosen):
        every = tuple(phrases[i] for i in joint)
        pools.append(Pool(every, every=True, newest=eligible[0][0] > budget))
    if not chosen:
        pools.append(Pool((phrases[eligible[0][1]],), newest=True))
    elif all(terms[i].entity for i in chosen):  # names alone draw no match (matching.py)
        plain = [i for _, i in present if not terms[i].entity and i not in chosen]
        if plain:
            pools.append(Pool((phrases[plain[0]],), newest=True))
    return pools


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    k: int,
    projects: Sequence[str] | None,
    include_history: bool,
    kinds: Sequence[str] | None,
    now_ms: int,
    weights: RankingWeights = DEFAULT_WEIGHTS,
    which: str = LIVE,
    related_within: int | None = None,
) -> list[Scored]:
    """The best ``k`` live memories (or those ``which`` names, SQL over ``memories AS m``)
    for ``query``, best first.

    ``projects`` None searches every project; ``include_history`` also matches
    the text of replaced versions (the hit is the memory's current id).  Only what
    matches is returned, with at most two ``related`` neighbours after it, each among
    the best ``related_within`` (``k`` unless given: :func:`.matching.select`); with
    the semantic extra, the closest memories in meaning match too
    (:func:`.semantic.lifts`).
    """
    terms = analyse_query(query)
    spans = date_spans(query, now_ms) if weights.date > 0 else []
    asked = [t.stem for t in terms if not is_date_word(t.word)] if spans else []
    if spans and not asked:  # "last week", "yesterday", "in March", "2023-05-08"
        return _period(conn, Scope(projects, kinds, spans, which), k, now_ms, weights)
    if not terms:
        return []
    stems = [t.stem for t in terms]
    prefixed = sum(1 << i for i, t in enumerate(terms) if _prefixed(t.stem, weights))
    wide = [s for i, s in enumerate(stems) if prefixed >> i & 1]
    n_docs, counts, longer = document_frequencies(conn, stems, include_history, wide)
    df = {s: max(counts[s], counts.get(s + "*", 0)) for s in stems}
    if spans and not any(df[s] for s in asked):  # "what happened yesterday", words unknown
        return _period(conn, Scope(projects, kinds, spans, which), k, now_ms, weights)
    if unheard(terms, df, author_names(conn).values()):  # asks about what is not there
        return []
    phrases = [fts_phrase(t.word, bool(prefixed >> i & 1)) for i, t in enumerate(terms)]
    plan = pool_plan(terms, phrases, df, n_docs, weights)
    scope = Scope(projects, kinds, rows=which)
    rows: dict[int, Row] = {}
    bm25: dict[int, float] = {}
    from_history: set[int] = set()
    if plan:
        rows, bm25, from_history = _candidates(conn, plan, scope, spans, include_history, weights)
    lift = _meaning(conn, query, scope, rows, bm25) if which == LIVE else {}
    if not bm25:
        return []
    extensions = [longer.get(s) for s in stems]
    held = Held(stems, prefixed, extensions, author_names(conn))
    held.read(rows, from_history)
    context = weights.context > 0 or weights.context_terms > 0 or weights.context_question > 0
    near = _sessions(conn, rows, bm25, held.matching, scope, weights) if context else {}
    held.read(rows, from_history)  # the neighbours context brought in
    held.matching.update(lift)  # the closest in meaning match as a shared word does
    shares = term_shares(terms, df, n_docs)
    share_list = [shares[s] for s in stems]
    entities = sum(1 << i for i, t in enumerate(terms) if t.entity) if weights.entity else 0
    scorer = Scorer(rows, bm25, near, held.masks, share_list, entities, spans, now_ms, weights)
    scorer.partial = held.partial
    totals = {r: sum(scorer.parts(r)) for r in rows}
    # with meaning in play, a lift is taken against the best lexical score over 1 (the
    # score each result shows then orders them as ranked: a merge by score keeps it)
    top = max([1.0, *totals.values()]) if lift else 1.0
    lift = {r: gain * top for r, gain in lift.items()}
    ranked = sorted((-totals[r] - lift.get(r, 0.0), rows[r][1], r) for r in rows)
    strong = _strong(bm25, held.matching, weights)
    chosen = select(
        (r for _, _, r in ranked), held.matching,
        lambda r: any(s in strong for s in near.get(r, ())), k, related_within,
    )  # fmt: skip
    left_out = {"context": not context, "date": not spans, "entity": not entities}
    return [
        _scored(r, related, rows, scorer, left_out, from_history, lift) for r, related in chosen
    ]


def _meaning(
    conn: sqlite3.Connection,
    query: str,
    scope: Scope,
    rows: dict[int, Row],
    bm25: dict[int, float],
) -> dict[int, float]:
    """The one seam of the semantic extra: the lifts of the query's closest memories in
    ``scope`` (:func:`.semantic.lifts`), those the words missed added to ``rows`` (BM25
    0); ``{}`` without the extra, and the ranking is the lexical one."""
    projects, kinds = scope.asked
    meaning = semantic.similarities(conn, query, rows, projects, kinds)
    found = {row[0]: row for row in fetch(conn, [r for r in meaning if r not in rows], scope)}
    lift = semantic.lifts({r: c for r, c in meaning.items() if r in rows or r in found})
    for r in lift.keys() & found.keys():
        rows[r], bm25[r] = found[r], 0.0
    return lift


def _scored(
    rowid: int,
    related: bool,
    rows: dict[int, Row],
    scorer: Scorer,
    left_out: dict[str, bool],
    from_history: set[int],
    lift: dict[int, float],
) -> Scored:
    """One chosen row as a result, with the parts of its score that were in play."""
    why = {
        name: part
        for name, part in zip(_NAMES, scorer.parts(rowid), strict=True)
        if not left_out.get(name)
    }
    if rowid in from_history:
        why["history"] = 0.0
    if rowid in lift:
        why["semantic"] = lift[rowid]
    return Scored(rows[rowid][1], sum(why.values()), why, related)


def _prefixed(stem: str, weights: RankingWeights) -> bool:
    """Whether a query term also matches the index terms it begins: a word of
    ``prefix_min`` letters or more, and one character of a gram run (``猫``: every
    bigram it begins, so every memory holding it, :mod:`..store.scripts`)."""
    if len(stem) == 1 and is_run(stem):
        return True
    return weights.prefix > 0 and len(stem) >= weights.prefix_min and not stem.isdigit()


def _strong(bm25: dict[int, float], matching: set[int], weights: RankingWeights) -> set[int]:
    """The strong matches: matching hits whose BM25 is at least ``context_seed_floor`` of
    the best (those whose session neighbours are read)."""
    best = max((bm25[r] for r in matching), default=0.0)
    floor = weights.context_seed_floor * best
    return {r for r in matching if bm25[r] >= floor and bm25[r] > 0}


def _candidates(
    conn: sqlite3.Connection,
    plan: Sequence[Pool],
    scope: Scope,
    spans: Sequence[Span],
    include_history: bool,
    weights: RankingWeights,
) -> tuple[dict[int, Row], dict[int, float], set[int]]:
    """The candidates of the pools of ``plan`` in ``scope`` (projects, kinds), and of
    the period the query names, and of replaced versions with ``include_history``:
    their rows, BM25 scores, and which came from history."""
    projects, kinds = scope.asked
    rows: dict[int, Row] = {}
    bm25: dict[int, float] = {}
    narrow = narrow_scope(conn, projects, kinds)
    pools = [(pool.expression, scope, pool.newest, narrow) for pool in plan]
    if scope.rows != LIVE:  # tombstones hold no text in memories_fts: history only
        pools = []
    elif spans:  # the period the query names gets its own candidates
        period = Scope(projects, kinds, spans, scope.rows)
        pools.append((plan[0].expression, period, plan[0].newest, True))
    for expression, where, newest, inside in pools:
        found = bm25_pool(
            conn, expression, where, weights.keywords_column, weights.pool,
            newest=newest, narrow=inside,
        )  # fmt: skip
        for score, row in found:
            if row[0] not in bm25:
                rows[row[0]] = row
                bm25[row[0]] = score
    from_history: set[int] = set()
    if include_history:
        older = history_pool(conn, plan[0].expression, scope, weights.keywords_column, weights.pool)
        for row in fetch(conn, older.keys() - bm25.keys()):
            rows[row[0]] = row
            bm25[row[0]] = older[row[0]] * weights.history
            from_history.add(row[0])
    return rows, bm25, from_history


def _sessions(
    conn: sqlite3.Connection,
    rows: dict[int, Row],
    bm25: dict[int, float],
    matching: set[int],
    scope: Scope,
    weights: RankingWeights,
) -> dict[int, dict[int, int]]:
    """Session neighbours (rowid -> {rowid: steps}, symmetric) of the strong matches
    that come from a session (see the module's docstring); new neighbours join the
    candidates with a BM25 of 0: they compete on their context."""
    best = sorted(_strong(bm25, matching, weights), key=bm25.__getitem__)
    best = [r for r in best if _session_gap(rows[r], weights)]
    seeds = [rows[r] for r in reversed(best[-weights.context_seeds :])] if best else []
    near: dict[int, dict[int, int]] = {}
    found = neighbours(
        conn,
        [(row, _session_gap(row, weights), not is_session_origin(row[2])) for row in seeds],
        scope,
        window=int(weights.context_window),
    )
    for seed, steps, row in found:
        rowid = row[0]
        if rowid not in rows:
            rows[rowid] = row
            bm25[rowid] = 0.0
        for a, b in ((seed, rowid), (rowid, seed)):
            links = near.setdefault(a, {})
            links[b] = min(links.get(b, steps), steps)
    return near


def _period(
    conn: sqlite3.Connection, scope: Scope, k: int, now_ms: int, weights: RankingWeights
) -> list[Scored]:
    """A query that only names a period: the memories written then (the newest
    ``pool`` of them), ranked by recency and importance; a corrected memory is demoted."""
    decay = math.log(2) / (weights.recency_half_life_days * DAY_MS)
    out = []
    for row in newest_in(conn, scope, max(k, weights.pool)):
        recency = weights.recency * math.exp(-decay * max(0, now_ms - row[4]))
        importance = weights.importance * (row[5] - 0.5) * 2
        superseded = -weights.superseded * weights.date if row[8] else 0.0
        why = {"date": weights.date, "recency": recency, "importance": importance}
        why["superseded"] = superseded
        out.append(Scored(row[1], sum(why.values()), why))
    out.sort(key=lambda s: -s.score)
    return out[:k]


def _session_gap(row: Row, weights: RankingWeights) -> int:
    """How far apart two memories of ``row``'s session may be (see the module docstring)."""
    if is_session_origin(row[2]):
        return int(weights.context_gap_ms)
    return int(weights.session_gap_ms)
