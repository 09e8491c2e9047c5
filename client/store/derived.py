"""The keepers of the derived tables: what a batch of writes changes in them, and
``rebuild``.

Every table here follows from ``memories`` and ``history`` alone (:mod:`.schema`
lists them).  The one writer (:mod:`sealmem.client.store.writer`) calls
:func:`memories_changed` and :func:`history_added` / :func:`history_removed` once per
batch with the rows it inserted, replaced and deleted; nothing else writes them (no
trigger: a write that bypasses the writer, another tool's, leaves them behind until
:func:`rebuild`, which ``sealmem reindex`` and ``sealmem recover`` run, and which
``sealmem doctor`` asks for when :func:`drift` finds them out of step).

- ``memories_fts``: the old text of a deleted or re-worded row leaves the index, the
  text of an inserted or re-worded row enters it (an update that keeps the text keeps
  its entry);
- ``history_fts``: the text (and grams) of each added history row, by its ``seq``; a
  removed one leaves;
- ``store_counts``: rows inserted less rows deleted;
- ``own_counts``: per (project, editor), the team rows and live team rows that left
  and came;
- ``push_dirty``: the ids of the team rows written of the member this store pushes as
  (``push_editor``; every member while none is named), before or after the write;
- ``embeddings``: the vectors of re-worded and deleted rows are dropped (the semantic
  extra derives the new ones outside the writer; a rebuild drops them all);
- ``term_counts``: counted again from the index when the store has doubled since the
  last count (amortized: about a microsecond of CPU per memory written), else the
  stems of the rows that left and came.
"""

from __future__ import annotations

import operator
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

from .gramrows import fill_history
from .rows import MEMORY_VALUE_COLUMNS, at, norm_hash
from .scrub import FTS_TABLES
from .terms import stored_grams, stored_stems

__all__ = [
    "EVERY_BUCKET",
    "FREQUENT_DOCS",
    "REBUILD_STEPS",
    "Row",
    "dirty_everywhere",
    "drift",
    "history_added",
    "history_removed",
    "memories_changed",
    "rebuild",
    "refresh_terms",
]

FREQUENT_DOCS = 1000
"""A term held by fewer memories is counted in the index when recall needs it (cheap)."""

Values = Sequence[Any]
"""A ``memories`` row as the writer builds it (:data:`~.rows.MEMORY_VALUE_COLUMNS`)."""


class Row:
    """The fields of a ``memories`` row the keepers read, from an old row (read with
    :data:`~.rows.MEMORY_COLUMNS`) or new values (:data:`~.rows.MEMORY_VALUE_COLUMNS`)."""

    __slots__ = (
        "content", "deleted", "editor", "grams", "id", "keywords", "project", "stems", "team"
    )  # fmt: skip

    def __init__(self, source: sqlite3.Row | Values) -> None:
        get = _FROM_ROW if isinstance(source, sqlite3.Row) else _FROM_VALUES
        (
            self.id, self.project, self.editor, self.content, self.keywords, self.stems,
            self.grams, team, gone,
        ) = get(source)  # fmt: skip
        self.team = team == "team"
        self.deleted = bool(gone)


_FIELDS = (
    "id", "project", "editor", "content", "keywords", "stems", "grams", "visibility", "deleted"
)  # fmt: skip
_FROM_ROW = at(*_FIELDS)
_FROM_VALUES = operator.itemgetter(*map(MEMORY_VALUE_COLUMNS.index, _FIELDS))


def memories_changed(
    conn: sqlite3.Connection,
    *,
    after: int | None,
    inserted: Sequence[Row],
    replaced: Sequence[tuple[Row, Row, int]],
    deleted: Sequence[tuple[Row, int]],
) -> None:
    """Keep every derived table of ``memories`` for one batch: rows ``inserted`` (all
    the rows above rowid ``after``), ``replaced`` in place ``(old, new, rowid)`` and
    ``deleted`` ``(old, rowid)``."""
    reworded = [
        (old, new, rowid)
        for old, new, rowid in replaced
        if (old.content, old.keywords) != (new.content, new.keywords)
    ]
    _index(conn, after, reworded, deleted)
    _drop_vectors(conn, [rowid for _, _, rowid in reworded] + [rowid for _, rowid in deleted])
    if len(inserted) != len(deleted):
        conn.execute(
            "UPDATE store_counts SET memories = memories + ?", (len(inserted) - len(deleted),)
        )
    gone = [old for old, _ in deleted] + [old for old, _, _ in replaced]
    came = [*inserted, *(new for _, new, _ in replaced)]
    _own_counts(conn, gone, came)
    _dirty(conn, after, replaced, [old for old, _ in deleted])
    _terms(conn, inserted, reworded, [old for old, _ in deleted])


def _index(
    conn: sqlite3.Connection,
    after: int | None,
    reworded: Sequence[tuple[Row, Row, int]],
    deleted: Sequence[tuple[Row, int]],
) -> None:
    """``memories_fts``: out with the old text (and grams) of ``reworded`` and
    ``deleted`` rows, in with the new text of ``reworded`` rows and of every row above
    ``after``."""
    if reworded or deleted:
        conn.executemany(
            "INSERT INTO memories_fts (memories_fts, rowid, content, keywords, grams) "
            "VALUES ('delete', ?, ?, ?, ?)",
            [(rowid, old.content, old.keywords, old.grams) for old, _, rowid in reworded]
            + [(rowid, old.content, old.keywords, old.grams) for old, rowid in deleted],
        )
        conn.executemany(
            "INSERT INTO memories_fts (rowid, content, keywords, grams) VALUES (?, ?, ?, ?)",
            [(rowid, new.content, new.keywords, new.grams) for _, new, rowid in reworded],
        )
    if after is not None:
        conn.execute(
            "INSERT INTO memories_fts (rowid, content, keywords, grams) "
            "SELECT rowid, content, keywords, grams FROM memories WHERE rowid > ?",
            (after,),
        )


def _drop_vectors(conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """``embeddings``: a vector never outlives the text it was derived from."""
    if rowids:
        conn.executemany("DELETE FROM embeddings WHERE rowid = ?", [(r,) for r in rowids])


def _own_counts(conn: sqlite3.Connection, gone: Sequence[Row], came: Sequence[Row]) -> None:
    counts: dict[tuple[str, str], list[int]] = {}
    for rows, sign in ((gone, -1), (came, 1)):
        for row in rows:
            if row.team:
                n = counts.setdefault((row.project, row.editor), [0, 0])
                n[0] += sign
                n[1] += sign * (not row.deleted)
    conn.executemany(
        "INSERT INTO own_counts (project, editor, rows, live) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (project, editor) DO UPDATE SET "
        "rows = rows + excluded.rows, live = live + excluded.live",
        [(p, e, n, live) for (p, e), (n, live) in counts.items() if n or live],
    )


def _dirty(
    conn: sqlite3.Connection,
    after: int | None,
    replaced: Sequence[tuple[Row, Row, int]],
    deleted: Sequence[Row],
) -> None:
    """``push_dirty``: the rows above rowid ``after`` (inserted), ``replaced`` and
    ``deleted`` that are team rows of the member this store pushes as."""
    if after is not None:
        conn.execute(
            "INSERT INTO push_dirty (project, id) SELECT project, id FROM memories "
            "WHERE rowid > ? AND visibility = 'team' "
            "AND coalesce(editor = (SELECT editor FROM push_editor), 1) ORDER BY rowid",
            (after,),
        )
    if not (replaced or deleted):
        return
    row = conn.execute("SELECT editor FROM push_editor").fetchone()
    me = None if row is None else str(row[0])

    def mine(r: Row) -> bool:
        return r.team and (me is None or r.editor == me)

    logged = [(r.project, r.id) for r in deleted if mine(r)]
    for old, new, _ in replaced:
        if mine(old) or mine(new):
            logged.append((old.project, old.id))
            if (new.project, new.id) != (old.project, old.id):
                logged.append((new.project, new.id))
    conn.executemany("INSERT INTO push_dirty (project, id) VALUES (?, ?)", logged)


EVERY_BUCKET = "*"
"""The id ``push_dirty`` logs for a chain whose buckets must all be read again."""


def dirty_everywhere(conn: sqlite3.Connection) -> None:
    """``push_dirty``: every bucket of every chain this member pushed (its next push
    reads them all)."""
    conn.execute(
        "INSERT INTO push_dirty (project, id) SELECT project, ? FROM own_chain", (EVERY_BUCKET,)
    )


def _terms(
    conn: sqlite3.Connection,
    inserted: Sequence[Row],
    reworded: Sequence[tuple[Row, Row, int]],
    deleted: Sequence[Row],
) -> None:
    """``term_counts`` after the batch (``memories_fts`` and ``store_counts`` hold it)."""
    if not (inserted or reworded or deleted):
        return
    # counted first, then whether the store has doubled (a refresh counts anew)
    doubled = conn.execute(
        "UPDATE term_counts_at SET counted = counted + ? RETURNING "
        "(SELECT memories FROM store_counts) >= max(2 * memories, ?)",
        (len(inserted) - len(deleted), FREQUENT_DOCS),
    ).fetchone()
    if doubled is None or doubled[0]:
        refresh_terms(conn)
        return
    tracked = {str(term) for (term,) in conn.execute("SELECT term FROM term_counts")}
    if not tracked:
        return
    olds = [*deleted, *(old for old, _, _ in reworded)]
    if any(old.stems is None for old in olds):  # written by another tool: not known
        conn.execute("DELETE FROM term_counts")
        conn.execute("UPDATE term_counts_at SET memories = 0")
        return
    gone = Counter(chain.from_iterable(str(r.stems).split() for r in olds))
    came = Counter(
        chain.from_iterable(
            str(r.stems).split() for r in (*inserted, *(new for _, new, _ in reworded))
        )
    )
    conn.executemany(
        "UPDATE term_counts SET docs = docs + ? WHERE term = ?",
        [(n, term) for term in tracked if (n := came[term] - gone[term])],
    )


_VOCAB = "temp.sealmem_terms_vocab"


def refresh_terms(conn: sqlite3.Connection) -> None:
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


_HISTORY_TEXT = """
SELECT seq,
       coalesce(json_extract(record_json, '$.content'), ''),
       coalesce((SELECT group_concat(value, ' ') FROM json_each(record_json, '$.keywords')), '')
FROM history
"""


def history_added(conn: sqlite3.Connection, after: int, texts: Sequence[tuple[str, str]]) -> None:
    """``history_fts``: index the history rows just added, ``seq`` ``after + 1`` on, whose
    text (content, space-joined keywords) is ``texts``, in order, with its grams."""
    conn.executemany(
        "INSERT INTO history_fts (rowid, content, keywords, grams) VALUES (?, ?, ?, ?)",
        [
            (after + i, content, keywords, stored_grams(content, keywords))
            for i, (content, keywords) in enumerate(texts, 1)
        ],
    )


def history_removed(conn: sqlite3.Connection, seqs: Sequence[int]) -> None:
    """``history_fts``: the history rows ``seqs`` left."""
    conn.executemany("DELETE FROM history_fts WHERE rowid = ?", [(s,) for s in seqs])


def _restem(conn: sqlite3.Connection) -> int:
    """Compute every row's ``stems``, ``grams`` and ``norm_hash`` again from its text; how
    many differed (what ``rebuild`` does before it indexes and counts terms)."""
    stale = []
    for rowid, content, keywords, deleted, stems, grams, nh in conn.execute(
        "SELECT rowid, content, keywords, deleted, stems, grams, norm_hash FROM memories"
    ).fetchall():
        want = (
            stored_stems(content, keywords),
            stored_grams(content, keywords),
            None if deleted else norm_hash(content),
        )
        if want != (stems, grams, nh):
            stale.append((*want, rowid))
    conn.executemany(
        "UPDATE memories SET stems = ?, grams = ?, norm_hash = ? WHERE rowid = ?", stale
    )
    return len(stale)


def _history_index(conn: sqlite3.Connection) -> None:
    # built anew from the rows it holds first: a DELETE reads the index it deletes
    # from, which may be the damage a rebuild is asked to mend
    conn.execute("INSERT INTO history_fts (history_fts) VALUES ('rebuild')")
    conn.execute("DELETE FROM history_fts")
    conn.execute(f"INSERT INTO history_fts (rowid, content, keywords) {_HISTORY_TEXT}")
    fill_history(conn)
    for table in FTS_TABLES:  # one segment each, without the tokens of the rows deleted
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")


REBUILD_STEPS = (
    "stems", "memories index", "history index", "counts", "push log", "terms", "vectors"
)  # fmt: skip


def rebuild(
    conn: sqlite3.Connection,
    progress: Callable[[int, int, str], None] | None = None,
) -> None:
    """Rebuild every derived table (and each row's ``stems``, ``grams``, ``norm_hash``) from
    ``memories`` and ``history``; run inside a write transaction.  The push log gets
    ``*`` for every project this member pushed (its next push reads every bucket)."""
    steps: list[Callable[[], object]] = [
        lambda: _restem(conn),
        lambda: conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')"),
        lambda: _history_index(conn),
        lambda: (
            conn.execute("UPDATE store_counts SET memories = (SELECT count(*) FROM memories)"),
            conn.execute("DELETE FROM own_counts"),
            conn.execute(f"INSERT INTO own_counts (project, editor, rows, live) {_OWN_SCAN}"),
        ),
        lambda: dirty_everywhere(conn),
        lambda: refresh_terms(conn),
        lambda: conn.execute("DELETE FROM embeddings"),  # derived again by the semantic extra
    ]
    for done, (name, step) in enumerate(zip(REBUILD_STEPS, steps, strict=True)):
        if progress is not None:
            progress(done, len(steps), name)
        step()
    if progress is not None:
        progress(len(steps), len(steps), "done")


_OWN_SCAN = """
SELECT project, editor, count(*), sum(deleted = 0) FROM memories WHERE visibility = 'team'
GROUP BY project, editor
"""
_OWN_KEPT = "SELECT project, editor, rows, live FROM own_counts WHERE rows != 0 OR live != 0"
#: the (project, editor) pairs counted otherwise than the table holds them, either way
_OWN_DRIFT = f"""
SELECT (SELECT count(*) FROM ({_OWN_SCAN} EXCEPT {_OWN_KEPT}))
     + (SELECT count(*) FROM ({_OWN_KEPT} EXCEPT {_OWN_SCAN}))
"""


def drift(conn: sqlite3.Connection) -> list[str]:
    """The derived counts that are out of step with ``memories`` (empty: none)."""
    out = []
    (stored,) = conn.execute("SELECT memories FROM store_counts").fetchone()
    (rows,) = conn.execute("SELECT count(*) FROM memories").fetchone()
    if int(stored) != int(rows):
        out.append(f"the row count says {stored}, the table holds {rows}")
    (own,) = conn.execute(_OWN_DRIFT).fetchone()
    if own:
        out.append(f"the team counts of {own} (project, writer) pairs differ")
    return out
