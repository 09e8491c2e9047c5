"""Recall: find and rank the memories that answer a query (DESIGN §7).

:func:`search` takes BM25 candidates from the FTS5 index, then re-ranks them in
Python with the features of :mod:`sealmem.client.ranking`; every component of
a score is returned in ``Scored.why``.  Tombstones never come back; superseded
memories are demoted, never hidden.  The connection is the store's: this
module only reads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sealmem.client.ranking import (
    QueryTerm,
    RankingWeights,
    Span,
    analyse_query,
    context_gain,
    coverage,
    date_spans,
    fts_match_expression,
    recency_score,
    stems_of,
    term_shares,
)
from sealmem.protocol.errors import InputError

__all__ = ["DEFAULT_WEIGHTS", "Scored", "search"]

DEFAULT_WEIGHTS = RankingWeights()
_MAX_K = 1000


@dataclass(frozen=True)
class Scored:
    """One ranked memory: its id, its score, and the score's parts (they sum to it)."""

    id: str
    score: float
    why: dict[str, float]


@dataclass(frozen=True)
class _Row:
    rowid: int
    id: str
    project: str
    origin: str
    created_at: int
    importance: float
    stems: frozenset[str]


class _Scope:
    """The WHERE clause that keeps live memories of the projects and kinds asked for."""

    def __init__(
        self,
        projects: Sequence[str] | None,
        kinds: Sequence[str] | None,
        spans: Sequence[Span] = (),
    ) -> None:
        clauses = ["m.deleted = 0"]
        self.args: list[object] = []
        for column, values in (("project", projects), ("kind", kinds)):
            if values is not None:
                clauses.append(f"m.{column} IN ({_marks(len(values))})")
                self.args.extend(values)
        if spans:
            clauses.append("(" + " OR ".join(["m.created_at BETWEEN ? AND ?"] * len(spans)) + ")")
            for span in spans:
                self.args.extend((span.start, span.end - 1))
        self.sql = " AND ".join(clauses)


def _marks(n: int) -> str:
    return ",".join("?" * n) if n else "NULL"


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
) -> list[Scored]:
    """The best ``k`` live memories for ``query``, best first.

    ``projects`` None searches every project; ``include_history`` also matches
    the text of replaced versions (the hit is the memory's current id).
    """
    if not 1 <= k <= _MAX_K:
        raise InputError(f"k={k} is out of range; ask for 1 to {_MAX_K} results")
    terms = analyse_query(query)
    if not terms:
        return []
    scope = _Scope(projects, kinds)
    n_docs, df = _document_frequencies(conn, terms, include_history)
    words = [t.word for t in terms if 0 < df[t.stem] <= n_docs * weights.common_share]
    words = words or [t.word for t in terms if df[t.stem] > 0]
    if not words:
        return []
    match = fts_match_expression(words)
    spans = date_spans(query, now_ms) if weights.date > 0 else []
    bm25 = _bm25_pool(conn, match, scope, weights)
    if spans:  # the period the query names gets its own candidates
        dated = _Scope(projects, kinds, spans)
        for rowid, value in _bm25_pool(conn, match, dated, weights).items():
            bm25.setdefault(rowid, value)
    from_history: set[int] = set()
    if include_history:
        for rowid, value in _history_pool(conn, match, scope, weights).items():
            if rowid not in bm25:
                bm25[rowid] = value * weights.history
                from_history.add(rowid)
    if not bm25:
        return []
    rows = _fetch(conn, bm25.keys())
    neighbours: dict[int, dict[int, int]] = {}
    if weights.context > 0 or weights.context_terms > 0:
        seeds = sorted(bm25, key=bm25.__getitem__, reverse=True)[: weights.context_seeds]
        neighbours = _neighbours(conn, [rows[r] for r in seeds], scope, weights)
        rows.update(_fetch(conn, neighbours.keys() - rows.keys()))
        for rowid in neighbours.keys() - bm25.keys():
            bm25[rowid] = 0.0  # a neighbour of a strong hit competes on its context
    superseded = _superseded(conn, [rows[r].id for r in bm25])
    shares = term_shares(terms, df, n_docs, weights.entity_boost)
    best = max(bm25.values()) or 1.0
    ranked = sorted(
        (
            _components(
                rowid, rows, bm25, best, neighbours, superseded, shares, spans, now_ms, weights
            )
            for rowid in bm25
        ),
        key=lambda item: (-sum(item[1].values()), rows[item[0]].id),
    )
    out: list[Scored] = []
    for rowid, why in ranked[:k]:
        if rowid in from_history:
            why["history"] = 0.0
        out.append(Scored(rows[rowid].id, sum(why.values()), why))
    return out


def _components(
    rowid: int,
    rows: dict[int, _Row],
    bm25: dict[int, float],
    best: float,
    neighbours: dict[int, dict[int, int]],
    superseded: set[str],
    shares: dict[str, float],
    spans: Sequence[Span],
    now_ms: int,
    weights: RankingWeights,
) -> tuple[int, dict[str, float]]:
    """The weighted parts of one candidate's score (see :mod:`sealmem.client.ranking`)."""
    row = rows[rowid]
    own = coverage(shares, row.stems)
    why = {"bm25": weights.bm25 * bm25[rowid] / best, "coverage": weights.coverage * own}
    if weights.context > 0 or weights.context_terms > 0:
        near = neighbours.get(rowid, {})
        gain = context_gain(shares, row.stems, (rows[n].stems for n in near))
        strongest = max(
            (
                bm25.get(n, 0.0)
                * weights.context_decay ** (d - 1)
                * (1.0 - weights.superseded if rows[n].id in superseded else 1.0)
                for n, d in near.items()
            ),
            default=0.0,
        )
        why["context"] = weights.context_terms * gain + weights.context * strongest / best
    if spans:
        inside = any(s.start <= row.created_at < s.end for s in spans)
        why["date"] = weights.date * inside
    relevance = sum(why.values())
    why["recency"] = weights.recency * recency_score(
        row.created_at, now_ms, weights.recency_half_life_days
    )
    why["importance"] = weights.importance * (row.importance - 0.5) * 2
    why["superseded"] = -weights.superseded * relevance if row.id in superseded else 0.0
    return rowid, why


def _document_frequencies(
    conn: sqlite3.Connection, terms: Sequence[QueryTerm], include_history: bool
) -> tuple[int, dict[str, int]]:
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.sealmem_recall_vocab "
        "USING fts5vocab(main, memories_fts, row)"
    )
    stems = [t.stem for t in terms]
    df = dict.fromkeys(stems, 0)
    sql = f"SELECT term, doc FROM temp.sealmem_recall_vocab WHERE term IN ({_marks(len(stems))})"
    for term, doc in conn.execute(sql, stems):
        df[term] = doc
    (n_docs,) = conn.execute("SELECT count(*) FROM memories").fetchone()
    if include_history:
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.sealmem_recall_hvocab "
            "USING fts5vocab(main, history_fts, row)"
        )
        hsql = sql.replace("sealmem_recall_vocab", "sealmem_recall_hvocab")
        for term, doc in conn.execute(hsql, stems):
            df[term] += doc
        (extra,) = conn.execute("SELECT count(*) FROM history").fetchone()
        n_docs += extra
    return max(n_docs, 1), df


def _bm25_pool(
    conn: sqlite3.Connection, match: str, scope: _Scope, weights: RankingWeights
) -> dict[int, float]:
    sql = (
        "SELECT m.rowid, -bm25(memories_fts, 1.0, ?) AS s FROM memories_fts "
        "JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND {scope.sql} ORDER BY s DESC LIMIT ?"
    )
    args = [weights.keywords_column, match, *scope.args, weights.pool]
    return {rowid: max(score, 1e-9) for rowid, score in conn.execute(sql, args)}


def _history_pool(
    conn: sqlite3.Connection, match: str, scope: _Scope, weights: RankingWeights
) -> dict[int, float]:
    sql = (
        "SELECT m.rowid, -bm25(history_fts, 1.0, ?) AS s FROM history_fts "
        "JOIN history h ON h.seq = history_fts.rowid JOIN memories m ON m.id = h.id "
        f"WHERE history_fts MATCH ? AND {scope.sql} ORDER BY s DESC LIMIT ?"
    )
    args = [weights.keywords_column, match, *scope.args, weights.pool]
    found: dict[int, float] = {}
    for rowid, score in conn.execute(sql, args):
        found[rowid] = max(found.get(rowid, 0.0), score, 1e-9)
    return found


def _fetch(conn: sqlite3.Connection, rowids: Iterable[int]) -> dict[int, _Row]:
    wanted = list(rowids)
    if not wanted:
        return {}
    sql = (
        "SELECT rowid, id, project, origin, created_at, local_importance, content, keywords "
        f"FROM memories WHERE rowid IN ({_marks(len(wanted))})"
    )
    return {
        r[0]: _Row(r[0], r[1], r[2], r[3], r[4], r[5], stems_of(f"{r[6]} {r[7]}"))
        for r in conn.execute(sql, wanted)
    }


def _neighbours(
    conn: sqlite3.Connection, seeds: Sequence[_Row], scope: _Scope, weights: RankingWeights
) -> dict[int, dict[int, int]]:
    """Up to ``context_window`` memories on each side of each seed in its session (same
    origin and project, live, in scope, at most ``context_gap_ms`` away), with their
    distance in steps; the relation is made symmetric."""
    if not seeds:
        return {}
    gap, window = int(weights.context_gap_ms), int(weights.context_window)
    side = (
        "(SELECT group_concat(r) FROM (SELECT m.rowid AS r FROM memories m "
        "WHERE m.origin = seed.origin AND m.project = seed.project "
        f"AND m.created_at BETWEEN {{lo}} AND {{hi}} AND {{beyond}} AND m.rowid != seed.rid "
        f"AND {scope.sql} ORDER BY {{order}} LIMIT {window}))"
    )
    before = side.format(
        lo=f"seed.t - {gap}",
        hi="seed.t",
        beyond="(m.created_at < seed.t OR m.rowid < seed.rid)",
        order="m.created_at DESC, m.rowid DESC",
    )
    after = side.format(
        lo="seed.t",
        hi=f"seed.t + {gap}",
        beyond="(m.created_at > seed.t OR m.rowid > seed.rid)",
        order="m.created_at, m.rowid",
    )
    values = ",".join(["(?,?,?,?)"] * len(seeds))
    sql = (
        f"WITH seed(rid, origin, project, t) AS (VALUES {values}) "
        f"SELECT seed.rid, {before}, {after} FROM seed"
    )
    args: list[object] = []
    for row in seeds:
        args.extend((row.rowid, row.origin, row.project, row.created_at))
    args.extend(scope.args)
    args.extend(scope.args)
    found: dict[int, dict[int, int]] = {}
    for rid, *sides in conn.execute(sql, args):
        for listed in sides:
            for distance, hit in enumerate(
                map(int, (listed or "").split(",") if listed else ()), 1
            ):
                for a, b in ((rid, hit), (hit, rid)):
                    near = found.setdefault(a, {})
                    near[b] = min(near.get(b, distance), distance)
    return found


def _superseded(conn: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
    sql = (
        "SELECT DISTINCT s.old_id FROM supersedes s JOIN memories n ON n.id = s.new_id "
        f"WHERE n.deleted = 0 AND s.old_id IN ({_marks(len(ids))})"
    )
    return {r[0] for r in conn.execute(sql, list(ids))}
