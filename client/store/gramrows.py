"""The grams of rows already stored, filled where SQL alone cannot compute them: by
migrations 7 and 11 (:mod:`.schema`) for a store of before them, and by ``rebuild``
(:mod:`.derived`) for the history index.  Only rows whose text has grams are written
(:func:`sealmem.client.store.terms.stored_grams`: none for ASCII text)."""

from __future__ import annotations

import sqlite3

from .terms import stored_grams, stored_stems

__all__ = ["fill_history", "fill_memories"]


def fill_memories(conn: sqlite3.Connection) -> int:
    """``memories.grams`` and ``stems`` (which hold the grams' terms) of every row whose
    grams are not what they are now; how many rows changed (the caller then builds
    ``memories_fts`` again if any did)."""
    rows = conn.execute("SELECT rowid, content, keywords, grams FROM memories").fetchall()
    changed = [
        (grams, stored_stems(content, keywords), rowid)
        for rowid, content, keywords, before in rows
        if (grams := stored_grams(content, keywords)) != before
    ]
    conn.executemany("UPDATE memories SET grams = ?, stems = ? WHERE rowid = ?", changed)
    return len(changed)


def fill_history(conn: sqlite3.Connection) -> None:
    """``history_fts.grams`` of every indexed history row with grams."""
    rows = conn.execute("SELECT rowid, content, keywords, grams FROM history_fts").fetchall()
    conn.executemany(
        "UPDATE history_fts SET grams = ? WHERE rowid = ?",
        [
            (grams, rowid)
            for rowid, content, keywords, before in rows
            if (grams := stored_grams(content, keywords)) is not None and grams != before
        ],
    )
