"""The SQL side of recall: term statistics, candidate pools, session neighbours.

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
from dataclasses import dataclass, field

from .names import member_ids
from .ranking import Span

__all__ = [
    "LIVE",
    "Row",
    "Scope",
    "bm25_pool",
    "document_frequencies",
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
                clauses.append(f"m.{column} IN ({_marks(len(values))})")
                self.args.extend(values)
        if spans:
            clauses.append("(" + " OR ".join(["m.created_at BETWEEN ? AND ?"] * len(spans)) + ")")
            for span in spans:
                self.args.extend((span.start, span.end - 1))
        self.sql = " AND ".join(clauses)


def _marks(n: int) -> str:
    return ",".join("?" * n) if n else "NULL"


def _cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples, whatever the store's connection uses
    return cur


_MEMBERS: OrderedDict[int, tuple[sqlite3.Connection, tuple[int, int]]] = OrderedDict()


def _rows(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor for queries of :data:`_COLUMNS`: ``sealmem_member(kid)`` (the member id a
    key writes for, by the newest accepted roster; NULL for NULL) registered on ``conn``
    and renewed when the database changed."""
    cur = _cursor(conn)
    version = _version(cur, conn)
    cached = _MEMBERS.get(id(conn))
    if cached is None or cached[0] is not conn or cached[1] != version:
        ids = member_ids(conn)
        conn.create_function(
            "sealmem_member", 1, lambda kid: None if kid is None else ids.get(kid, kid),
            deterministic=True,
        )  # fmt: skip
        _MEMBERS[id(conn)] = (conn, version)
        while len(_MEMBERS) > _STATS_SLOTS:
            _MEMBERS.popitem(last=False)
    _MEMBERS.move_to_end(id(conn))
    return cur


@dataclass
class _Stats:
    """Document count and per-stem document frequencies of one connection's index,
    valid while ``version`` (data_version, total_changes) is unchanged."""

    conn: sqlite3.Connection
    version: tuple[int, int]
    n_docs: int
    df: dict[str, int] = field(default_factory=dict)
    longer: dict[str, frozenset[str]] = field(default_factory=dict)


_STATS: OrderedDict[tuple[int, bool], _Stats] = OrderedDict()
_STATS_SLOTS = 8


def _version(cur: sqlite3.Cursor, conn: sqlite3.Connection) -> tuple[int, int]:
    (data_version,) = cur.execute("PRAGMA data_version").fetchone()
    return int(data_version), conn.total_changes


def document_frequencies(
    conn: sqlite3.Connection,
    stems: Sequence[str],
    include_history: bool,
    prefixes: Sequence[str] = (),
) -> tuple[int, dict[str, int], dict[str, frozenset[str]]]:
    """The number of memories (plus replaced versions with ``include_history``), how
    many of them hold each stem, and for each of ``prefixes`` the index terms it
    begins; the document count of a prefix (keyed ``"<stem>*"``) is the postings of
    those terms (an upper bound).

    Cached per connection: ``PRAGMA data_version`` moves when another connection
    commits and ``total_changes`` when this one writes, so a cached figure is never
    stale; the cache holds a few connections (it keeps them referenced, never uses a
    closed one: an entry is only read through the very connection object it names).
    """
    cur = _cursor(conn)
    version = _version(cur, conn)
    key = (id(conn), include_history)
    stats = _STATS.get(key)
    tables = ["memories_fts", "history_fts"] if include_history else ["memories_fts"]
    if stats is None or stats.conn is not conn:
        for table in tables:  # temp tables live as long as the connection
            cur.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_vocab(table)} "
                f"USING fts5vocab(main, {table}, row)"
            )
    if stats is None or stats.conn is not conn or stats.version != version:
        stats = _Stats(conn, version, _count(cur, include_history))
        _STATS[key] = stats
        while len(_STATS) > _STATS_SLOTS:
            _STATS.popitem(last=False)
    _STATS.move_to_end(key)
    wanted = [p for p in prefixes if p not in stats.longer]
    wanted += [s for s in stems if s not in stats.df and s not in wanted]
    kept = _kept(cur, wanted)
    for stem in prefixes:
        if stem not in stats.longer:
            exact, stats.df[stem + "*"], stats.longer[stem] = _prefixed(cur, stem, tables, kept)
            stats.df[stem] = exact  # the range holds the stem itself: no second lookup
    missing = [s for s in dict.fromkeys(stems) if s not in stats.df]
    if missing:
        found = {s: kept.get(s, 0) for s in missing}
        for table in tables:
            walk = [s for s in missing if table != "memories_fts" or s not in kept]
            if not walk:
                continue
            sql = f"SELECT term, doc FROM temp.{_vocab(table)} WHERE term IN ({_marks(len(walk))})"
            for term, doc in cur.execute(sql, walk):
                found[term] += doc
        stats.df.update(found)
    df = {s: stats.df[s] for s in [*stems, *(p + "*" for p in prefixes)]}
    return stats.n_docs, df, {p: stats.longer[p] for p in prefixes}


def _kept(cur: sqlite3.Cursor, stems: Sequence[str]) -> dict[str, int]:
    """The ``memories_fts`` document counts of those ``stems`` the store keeps (frequent
    terms, :mod:`sealmem.client.store.derived`), while they count every row it holds."""
    if not stems:
        return {}
    sql = (
        f"SELECT term, docs FROM term_counts WHERE term IN ({_marks(len(stems))}) "
        "AND (SELECT counted FROM term_counts_at) = (SELECT memories FROM store_counts)"
    )
    return {term: int(docs) for term, docs in cur.execute(sql, list(stems))}


def _prefixed(
    cur: sqlite3.Cursor, stem: str, tables: list[str], kept: dict[str, int]
) -> tuple[int, int, frozenset[str]]:
    """The document count of ``stem``, the postings of the index terms it begins (itself
    included) and those terms: one range of the vocabulary per table.  The count of a
    kept term (``kept``: in ``memories_fts``) is read, not walked: its range then starts
    after it (a longer term goes on with a letter or a digit, all above "0")."""
    end = stem[:-1] + chr(ord(stem[-1]) + 1)
    exact = total = 0
    terms: set[str] = set()
    for table in tables:
        start = stem
        if table == "memories_fts" and stem in kept:
            exact = total = kept[stem]
            terms.update([stem] if exact else [])
            start = stem + "0"
        sql = f"SELECT term, doc FROM temp.{_vocab(table)} WHERE term >= ? AND term < ?"
        for term, doc in cur.execute(sql, (start, end)):
            terms.add(term)
            total += int(doc)
            if term == stem:
                exact += int(doc)
    return exact, total, frozenset(terms)


def _vocab(table: str) -> str:
    """The temp fts5vocab table (one row per term) over ``table``."""
    return f"sealmem_recall_{table}_vocab"


def _count(cur: sqlite3.Cursor, include_history: bool) -> int:
    # inside a write transaction FTS5 has not written its new totals yet: count
    n = None if cur.connection.in_transaction else _indexed(cur)
    if n is None:
        (n,) = cur.execute("SELECT count(*) FROM memories").fetchone()
    if include_history:
        (extra,) = cur.execute("SELECT count(*) FROM history").fetchone()
        n += extra
    return max(int(n), 1)


def _indexed(cur: sqlite3.Cursor) -> int | None:
    """``count(*)`` of ``memories`` (the writer indexes every row, tombstones too) without
    a scan (milliseconds at 100k memories, paid by every cold recall): the first varint
    of FTS5's averages record (``memories_fts_data`` row 1), the row count its own BM25
    uses.  None when it cannot be read."""
    row = cur.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
    if row is None or not isinstance(row[0], bytes):
        return None
    return _varint(row[0])


def _varint(data: bytes) -> int | None:
    """The SQLite varint at the start of ``data`` (big-endian, 7 bits a byte while the high
    bit is set, all 8 of a ninth); None if ``data`` ends first (nothing was indexed)."""
    value = 0
    for i, byte in enumerate(data[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return None


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
        f"SELECT coalesce(sum(live) FILTER (WHERE project IN ({_marks(len(projects))})), 0), "
        "coalesce(sum(live), 0) FROM own_counts"
    )
    inside, live = _cursor(conn).execute(sql, list(projects)).fetchone()
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
    for rowid, score in _cursor(conn).execute(sql, [keywords_weight, match, *scope.args, limit]):
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
        f"WHERE m.rowid IN ({_marks(len(wanted))}){where}"
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
