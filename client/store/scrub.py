"""Wiping forgotten text from the store's files, not only from its tables.

Deleting a row does not erase it: SQLite leaves the bytes in free space of the
page and on free pages, FTS5 marks a deleted document in a new segment while the
old segment keeps its tokens, and a WAL file keeps every page image written
since the last checkpoint.  So every store connection runs with ``PRAGMA
secure_delete = ON`` (freed cells and pages are overwritten with zeros), and after a
purge (a winning tombstone) :func:`settle` merges both full-text indexes into one
segment each, which drops the deleted tokens, then truncates the WAL.  Another
process reading the store at that moment keeps the WAL from being truncated: it goes
when that process closes the store (the last connection checkpoints and deletes it).
"""

from __future__ import annotations

import sqlite3

from .connection import transaction

__all__ = ["FTS_TABLES", "settle"]

FTS_TABLES = ("memories_fts", "history_fts")


def settle(conn: sqlite3.Connection) -> bool:
    """Optimize the full-text indexes and truncate the WAL; False if the WAL could not
    be truncated (another process is reading the store).  Outside any transaction."""
    with transaction(conn):
        for table in FTS_TABLES:
            conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return int(busy) == 0
