"""Wiping forgotten text from the store's files, not only from its tables.

Deleting a row does not erase it: SQLite leaves the bytes in free space of the
page and on free pages, FTS5 marks a deleted document in a new segment while the
old segment keeps its tokens, and a WAL file keeps every page image written
since the last checkpoint.  So, after a purge (a winning tombstone,
:mod:`sealmem.client.store.writer`):

- every store connection runs with ``PRAGMA secure_delete = ON``
  (:func:`sealmem.client.store.connection.connect`): freed cells and pages are
  overwritten with zeros;
- :func:`settle` merges both full-text indexes into one segment each
  (``'optimize'``), which drops the deleted tokens, then checkpoints the WAL
  with ``TRUNCATE``, so that no older page image stays in ``store.db-wal``.

``settle`` runs after the purging transaction committed.  Another process that
holds a read transaction on the store at that moment keeps the WAL from being
truncated: :func:`settle` then returns False, and the WAL goes when that process
closes the store (the last connection checkpoints and deletes it).
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
