"""Document counts of frequent terms, kept by the store (schema version 12).

FTS5 keeps no document count per term: ``fts5vocab`` walks the term's postings, so
the first recall of a process that names a word held by most memories paid
milliseconds for each such word (a word in 90 % of 100k memories: 2-4 ms).  The
store therefore keeps the count of every term held by at least
:data:`FREQUENT_DOCS` memories in ``term_counts``; recall reads it there and walks
the postings only of the other, rarer words (cheap: few postings).

The set of terms is chosen from the index itself (:func:`refresh`, one pass over the
vocabulary: about 60 ms at 100k memories) by the migration and again each time the
store has doubled since (:func:`keep_fresh`, called by the write paths), so a
store that grows one ``remember`` at a time gets its frequent words too.  Between
two refreshes the counts are exact: the triggers of version 12 add or take one per
term of ``memories.stems`` when a single write inserts, deletes or re-words a row,
and the batch writer adds its inserted rows once per batch (:func:`count_added`).
A write whose stems are not known (NULL, a text changed without its stems, or since
version 13 a value that is not a clean word list: the triggers split on spaces only)
empties the table: recall then walks the postings again, until the next refresh.
A term left out of the table is never a wrong count, only a slower one; and recall
reads the table only while the rows it has counted (``term_counts_at.counted``)
are the rows the store holds (``store_counts.memories``), so a write path that
inserts rows without counting them costs speed, not correctness.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from itertools import chain

__all__ = ["FREQUENT_DOCS", "count_added", "keep_fresh", "refresh"]

FREQUENT_DOCS = 1000  # a term held by fewer memories is counted in the index (cheap)

_VOCAB = "temp.sealmem_terms_vocab"


def refresh(conn: sqlite3.Connection) -> None:
    """Count again, from the full-text index, every term held by at least
    :data:`FREQUENT_DOCS` memories (inside the caller's write transaction)."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCAB} USING fts5vocab(main, memories_fts, row)"
    )
    conn.execute("DELETE FROM term_counts")
    conn.execute(
        f"INSERT INTO term_counts (term, docs) SELECT term, doc FROM {_VOCAB} WHERE doc >= ?",
        (FREQUENT_DOCS,),
    )
    conn.execute(
        "INSERT OR REPLACE INTO term_counts_at (one, memories, counted) "
        "SELECT 1, memories, memories FROM store_counts"
    )


def keep_fresh(conn: sqlite3.Connection) -> bool:
    """:func:`refresh` when the store holds twice the memories it held at the last
    refresh (and at least :data:`FREQUENT_DOCS`): amortized, about a microsecond of
    CPU per memory written.  True when it did."""
    row = conn.execute(
        "SELECT s.memories >= max(2 * coalesce(a.memories, 0), ?) "
        "FROM store_counts AS s LEFT JOIN term_counts_at AS a ON a.one = 1",
        (FREQUENT_DOCS,),
    ).fetchone()
    if row is None or not row[0]:
        return False
    refresh(conn)
    return True


def count_added(conn: sqlite3.Connection, stems: Sequence[str | None]) -> None:
    """Count the rows a batch inserted while their per-row triggers stood aside
    (``fts_batch``), given their ``memories.stems``, after ``store_counts`` counted
    them; refreshes first when the store has doubled (the index then does not hold
    the batch yet: its terms are counted here, its rows are in ``store_counts``).
    The stems are the batch writer's own (``stored_stems``: always a clean word list,
    so unlike the triggers this does not look for a foreign value)."""
    if not stems:
        return
    refreshed = keep_fresh(conn)
    if any(value is None for value in stems):
        conn.execute("DELETE FROM term_counts")
        conn.execute("UPDATE term_counts_at SET memories = 0")
        return
    if not refreshed:
        conn.execute("UPDATE term_counts_at SET counted = counted + ?", (len(stems),))
    tracked = {term for (term,) in conn.execute("SELECT term FROM term_counts")}
    if not tracked:
        return
    counts = Counter(chain.from_iterable(str(value).split() for value in stems))
    conn.executemany(
        "UPDATE term_counts SET docs = docs + ? WHERE term = ?",
        [(n, term) for term, n in counts.items() if term in tracked],
    )
