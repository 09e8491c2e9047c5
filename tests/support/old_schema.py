"""Make a store look as an older sealmem left it, for the tests of a migration."""

from __future__ import annotations

import sqlite3

__all__ = ["rewind_schema"]


def rewind_schema(conn: sqlite3.Connection, before: int) -> None:
    """Forget the migrations from version ``before`` on, and undo those that cannot run
    twice (version 7 adds a column, version 8 a table, version 10 a row count table,
    version 11 a column, version 12 tables and triggers), so that opening the store runs
    them again.  Versions 13 and 14 can run twice (they refill stems, count again and
    replace version 12's triggers): for a store as version 12 left it, rewind to 12 and
    open it with ``MIGRATIONS[:12]`` (13: rewind to 13, open with ``MIGRATIONS[:13]``)."""
    conn.execute("DELETE FROM schema_migrations WHERE version >= ?", (before,))
    if before <= 12:
        for name in ("insert", "delete", "update"):
            for suffix in ("", "_unknown"):
                conn.execute(f"DROP TRIGGER IF EXISTS memories_terms_{name}{suffix}")
        conn.execute("DROP TABLE IF EXISTS term_counts")
        conn.execute("DROP TABLE IF EXISTS term_counts_at")
    if before <= 11:
        conn.execute("DROP TRIGGER IF EXISTS memories_stems_stale")
        columns = [row[1] for row in conn.execute("PRAGMA table_info(memories)")]
        if "stems" in columns:
            conn.execute("ALTER TABLE memories DROP COLUMN stems")
    if before <= 10:
        for trigger in ("memories_total_insert", "memories_total_delete"):
            conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        conn.execute("DROP TABLE IF EXISTS store_counts")
    if before <= 8:
        for name in ("insert", "update", "delete"):
            conn.execute(f"DROP TRIGGER IF EXISTS memories_count_{name}")
        conn.execute("DROP INDEX IF EXISTS memories_own_tombs")
        conn.execute("DROP TABLE IF EXISTS own_counts")
    if before <= 7:
        for name in ("insert", "update", "delete"):
            conn.execute(f"DROP TRIGGER IF EXISTS memories_push_{name}")
        for index in (
            "memories_own",
            "memories_own_live",
            "memories_own_bucket",
            "memories_no_bucket",
        ):
            conn.execute(f"DROP INDEX IF EXISTS {index}")
        conn.execute("DROP TABLE IF EXISTS push_dirty")
        columns = [row[1] for row in conn.execute("PRAGMA table_info(memories)")]
        if "bucket_key" in columns:
            conn.execute("ALTER TABLE memories DROP COLUMN bucket_key")
