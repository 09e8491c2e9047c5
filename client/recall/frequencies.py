"""Term statistics of the store's index for recall: the document count and each stem's
document frequency, read from FTS5's own vocabulary and cached per connection until the
database changes (``PRAGMA data_version`` and the connection's own changes)."""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["SLOTS", "db_version", "document_frequencies", "marks", "plain_cursor"]


def marks(n: int) -> str:
    return ",".join("?" * n) if n else "NULL"


def plain_cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples, whatever the store's connection uses
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
SLOTS = 8


def db_version(cur: sqlite3.Cursor, conn: sqlite3.Connection) -> tuple[int, int]:
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
    cur = plain_cursor(conn)
    now = db_version(cur, conn)
    key = (id(conn), include_history)
    stats = _STATS.get(key)
    tables = ["memories_fts", "history_fts"] if include_history else ["memories_fts"]
    if stats is None or stats.conn is not conn:
        for table in tables:  # temp tables live as long as the connection
            cur.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_vocab(table)} "
                f"USING fts5vocab(main, {table}, row)"
            )
    if stats is None or stats.conn is not conn or stats.version != now:
        stats = _Stats(conn, now, _count(cur, include_history))
        _STATS[key] = stats
        while len(_STATS) > SLOTS:
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
            sql = f"SELECT term, doc FROM temp.{_vocab(table)} WHERE term IN ({marks(len(walk))})"
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
        f"SELECT term, docs FROM term_counts WHERE term IN ({marks(len(stems))}) "
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
