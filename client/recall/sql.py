"""The SQL side of recall: candidate pools, session neighbours (term statistics:
:mod:`.frequencies`).

Every function here is one round trip to SQLite (the statistics are cached per
connection until the database changes) and returns plain tuples, so that
:mod:`sealmem.client.recall.search` can score them without asking again.  Nothing is
written: the connection is the store's.

A candidate row (:data:`Row`) carries what ranking needs and nothing more:
``(rowid, id, origin, project, created_at, local_importance, content, keywords,
superseded, author, stems)``; ``superseded`` is 1 when a live memory corrects it, and
``stems`` (None when not known) are :func:`sealmem.client.store.terms.stored_stems`.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from .frequencies import SLOTS, db_version, marks, plain_cursor
from .names import member_ids
from .ranking import Span

__all__ = [
    "LIVE",
    "Row",
    "Scope",
    "bm25_pool",
    "fetch",
    "history_pool",
    "narrow_scope",
    "neighbours",
    "newest_in",
]

Row = tuple[int, str, str, str, int, float, str, str, int, str, str | None]
LIVE = "m.deleted = 0"
"""The rows a :class:`Scope` keeps unless told otherwise: live memories."""

# Superseded: a live memory corrects it and the correction applies (recall/standing.py):
# written here, by the member that wrote the corrected version (any of its devices: a
# sibling device's correction is the member's own), or accepted by a person (while the
# member of its writing device is not muted); a teammate's correction of someone else's
# memory is a proposal and demotes nothing.  ``sealmem_member`` is registered by :func:`_rows`.
_WRITER = "sealmem_member(CASE {t}.transport WHEN 'local' THEN {t}.editor ELSE {t}.signer END)"
_COLUMNS = (
    "m.rowid, m.id, m.origin, m.project, m.created_at, m.local_importance, m.content, "
    "m.keywords, EXISTS (SELECT 1 FROM supersedes x JOIN memories n ON n.id = x.new_id "
    "WHERE x.old_id = m.id AND n.deleted = 0 AND (n.transport = 'local' "
    f"OR {_WRITER.format(t='n')} = {_WRITER.format(t='m')} OR (EXISTS (SELECT 1 FROM verdicts v "
    "WHERE v.id = n.id AND v.hlc_wall = n.hlc_wall AND v.hlc_counter = n.hlc_counter "
    "AND v.editor = n.editor AND v.verdict = 'accepted') AND NOT EXISTS (SELECT 1 FROM "
    "member_trust t WHERE t.member = sealmem_member(n.signer) AND t.state = 'muted')))), "
    "m.author, m.stems"
)


class Scope:
    """The WHERE clause that keeps live memories (or the ``rows`` given) of the projects
    and kinds asked for, optionally written within some time spans."""

    def __init__(
        self,
        projects: Sequence[str] | None,
        kinds: Sequence[str] | None,
        spans: Sequence[Span] = (),
        rows: str = LIVE,
    ) -> None:
        self.asked, self.rows = (projects, kinds), rows
        clauses = [rows]
        self.args: list[object] = []
        for column, values in (("project", projects), ("kind", kinds)):
            if values is not None:
                clauses.append(f"m.{column} IN ({marks(len(values))})")
                self.args.extend(values)
        if spans:
            clauses.append("(" + " OR ".join(["m.created_at BETWEEN ? AND ?"] * len(spans)) + ")")
            for span in spans:
                self.args.extend((span.start, span.end - 1))
        self.sql = " AND ".join(clauses)


_MEMBERS: OrderedDict[int, tuple[sqlite3.Connection, tuple[int, int]]] = OrderedDict()


def _rows(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor for queries of :data:`_COLUMNS`: ``sealmem_member(kid)`` (the member id a
    key writes for, by the newest accepted roster; NULL for NULL) registered on ``conn``
    and renewed when the database changed."""
    cur = plain_cursor(conn)
    changed = db_version(cur, conn)
    cached = _MEMBERS.get(id(conn))
    if cached is None or cached[0] is not conn or cached[1] != changed:
        ids = member_ids(conn)
        conn.create_function(
            "sealmem_member", 1, lambda kid: None if kid is None else ids.get(kid, kid),
            deterministic=True,
        )  # fmt: skip
        _MEMBERS[id(conn)] = (conn, changed)
        while len(_MEMBERS) > SLOTS:
            _MEMBERS.popitem(last=False)
    _MEMBERS.move_to_end(id(conn))
    return cur


def bm25_pool(
    conn: sqlite3.Connection,
    match: str,
    scope: Scope,
    keywords_weight: float,
    limit: int,
    *,
    newest: bool = False,
    narrow: bool = False,
) -> list[tuple[float, Row]]:
    """The ``limit`` best BM25 matches in scope with their rows (higher score is better;
    equal scores: the earlier stored first).

    FTS5 computes BM25 for every match before it can sort, and its IDF reads every
    posting of every word, so this costs in proportion to the words' postings.  The
    scope is checked on the best matches only (a cold row read per match was half the
    pool's cost): the best ``2 * limit`` of the whole index are read first, and only
    when fewer than ``limit`` of them are in scope (another project's memories, say)
    does the pool ask again with the scope inside the ranking.  A ``narrow`` scope
    (most memories out of it: :func:`narrow_scope`) is put inside the ranking at
    once, so that BM25 is computed for the matches in scope only.
    With ``newest`` the pool is instead the ``limit`` most recently stored matches
    (rowid order, which FTS5 walks without sorting) and their BM25 is 0: they
    compete on the other features."""
    cur = _rows(conn)
    if newest:
        return [(1e-9, row) for row in cur.execute(*_ranked(match, scope, limit, None))]
    if not narrow:
        sql = (
            "SELECT rowid, -bm25(memories_fts, 1.0, ?) AS s FROM memories_fts "
            "WHERE memories_fts MATCH ? ORDER BY s DESC, rowid LIMIT ?"
        )
        best = cur.execute(sql, (keywords_weight, match, 2 * limit)).fetchall()
        found: list[tuple[float, Row]] = []
        for start in range(0, len(best), limit):
            part = best[start : start + limit]
            rows = {row[0]: row for row in fetch(conn, [rowid for rowid, _ in part], scope)}
            found.extend((max(s, 1e-9), rows[rowid]) for rowid, s in part if rowid in rows)
            if len(found) >= limit:
                return found[:limit]
        if len(best) < 2 * limit:
            return found  # every match was looked at
    ranked = cur.execute(*_ranked(match, scope, limit, keywords_weight))
    return [(max(r[0], 1e-9), r[1:]) for r in ranked]


def _ranked(
    match: str, scope: Scope, limit: int, keywords_weight: float | None
) -> tuple[str, list[object]]:
    """A pool ranked with the scope inside: the best BM25 matches in scope
    (``keywords_weight`` None: the newest, scored 0), rows joined after the LIMIT."""
    newest = keywords_weight is None
    score = "0.0" if newest else "-bm25(memories_fts, 1.0, ?)"
    order = "memories_fts.rowid DESC" if newest else "s DESC, m.rowid"
    sql = (
        f"SELECT {'' if newest else 'p.s, '}{_COLUMNS} FROM (SELECT m.rowid AS rid, "
        f"{score} AS s FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND {scope.sql} ORDER BY {order} LIMIT ?) AS p "
        "JOIN memories m ON m.rowid = p.rid"
    )
    return sql, [*([] if newest else [keywords_weight]), match, *scope.args, limit]


def narrow_scope(
    conn: sqlite3.Connection, projects: Sequence[str] | None, kinds: Sequence[str] | None
) -> bool:
    """Whether fewer than half of the live memories are likely in scope, judged from
    the team rows counted per project (``own_counts``, kept by the store): a scope of
    kinds, or a store whose live rows are all private, counts as narrow (the pool then
    ranks as it always did)."""
    if kinds is not None:
        return True
    if projects is None:
        return False
    sql = (
        f"SELECT coalesce(sum(live) FILTER (WHERE project IN ({marks(len(projects))})), 0), "
        "coalesce(sum(live), 0) FROM own_counts"
    )
    inside, live = plain_cursor(conn).execute(sql, list(projects)).fetchone()
    return not live or 2 * inside < live


def history_pool(
    conn: sqlite3.Connection, match: str, scope: Scope, keywords_weight: float, limit: int
) -> dict[int, float]:
    """Memories whose replaced versions match, by rowid, with their best BM25."""
    sql = (
        "SELECT m.rowid, -bm25(history_fts, 1.0, ?) AS s FROM history_fts "
        "JOIN history h ON h.seq = history_fts.rowid JOIN memories m ON m.id = h.id "
        f"WHERE history_fts MATCH ? AND {scope.sql} ORDER BY s DESC LIMIT ?"
    )
    found: dict[int, float] = {}
    for rowid, score in plain_cursor(conn).execute(
        sql, [keywords_weight, match, *scope.args, limit]
    ):
        found[rowid] = max(found.get(rowid, 0.0), score, 1e-9)
    return found


def fetch(conn: sqlite3.Connection, rowids: Iterable[int], scope: Scope | None = None) -> list[Row]:
    """The rows of these memories (those in ``scope`` when given)."""
    wanted = list(rowids)
    if not wanted:
        return []
    where = "" if scope is None else f" AND {scope.sql}"
    # NOT INDEXED: rowid lookups, never a scan of the project's index for the scope
    sql = (
        f"SELECT {_COLUMNS} FROM memories AS m NOT INDEXED "
        f"WHERE m.rowid IN ({marks(len(wanted))}){where}"
    )
    return list(_rows(conn).execute(sql, [*wanted, *(scope.args if scope else [])]))


def newest_in(conn: sqlite3.Connection, scope: Scope, limit: int) -> list[Row]:
    """The ``limit`` memories in scope stored last (rowid order, walked from the end
    without sorting: a recent period is found among the last rows, whatever the store's
    size; a memory pulled late with an older date counts as stored late)."""
    sql = (
        f"SELECT {_COLUMNS} FROM memories AS m NOT INDEXED WHERE {scope.sql} "
        "ORDER BY m.rowid DESC LIMIT ?"
    )
    return list(_rows(conn).execute(sql, [*scope.args, limit]))


def neighbours(
    conn: sqlite3.Connection,
    seeds: Sequence[tuple[Row, int, bool]],
    scope: Scope,
    *,
    window: int,
) -> list[tuple[int, int, Row]]:
    """``(seed rowid, steps, row)``: up to ``window`` memories on each side of each seed
    in its session, ``steps`` counting from 1 on each side.  A seed is ``(row, gap_ms,
    same_author)``: its session is the memories of the same origin and project written
    at most ``gap_ms`` away (live and in scope), and with ``same_author`` only those of
    the seed's author.  The caller decides which origins are sessions and which gaps
    apply; this only matches them."""
    if not seeds:
        return []
    side = (
        "(SELECT json_group_array(r) FROM (SELECT m.rowid AS r FROM memories m "
        "WHERE m.origin = seed.origin AND m.project = seed.project "
        "AND m.created_at BETWEEN {lo} AND {hi} AND {beyond} AND m.rowid != seed.rid "
        "AND (seed.author IS NULL OR m.author = seed.author) "
        f"AND {scope.sql} ORDER BY {{order}} LIMIT ?))"
    )
    before = side.format(
        lo="seed.t - seed.gap",
        hi="seed.t",
        beyond="(m.created_at < seed.t OR m.rowid < seed.rid)",
        order="m.created_at DESC, m.rowid DESC",
    )
    after = side.format(
        lo="seed.t",
        hi="seed.t + seed.gap",
        beyond="(m.created_at > seed.t OR m.rowid > seed.rid)",
        order="m.created_at, m.rowid",
    )
    values = ",".join(["(?,?,?,?,?,?)"] * len(seeds))
    sql = (
        f"WITH seed(rid, origin, project, t, gap, author) AS (VALUES {values}), "
        f"sides AS (SELECT seed.rid AS sid, {before} AS b, {after} AS a FROM seed), "
        "near AS (SELECT sid, j.key + 1 AS d, j.value AS nid FROM sides, json_each(sides.b) j "
        "UNION ALL SELECT sid, j.key + 1, j.value FROM sides, json_each(sides.a) j) "
        f"SELECT near.sid, near.d, {_COLUMNS} FROM near JOIN memories m ON m.rowid = near.nid"
    )
    args: list[object] = []
    for row, gap_ms, same_author in seeds:
        args.extend((row[0], row[2], row[3], row[4], gap_ms, row[9] if same_author else None))
    args.extend((*scope.args, window, *scope.args, window))
    return [(r[0], r[1], r[2:]) for r in _rows(conn).execute(sql, args)]
