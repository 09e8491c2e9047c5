"""A store as the pre-release builds left it (their schema version 14), for the tests of
the way out of it (``sealmem.client.store.prebaseline``); to be deleted with it.

The tables are those builds' own SQL, shrunk to what a store of theirs holds that the
way out reads or must leave (their derived tables and one of their triggers)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record

__all__ = ["OLD_MIGRATIONS", "pre_baseline_store"]

OLD_MIGRATIONS = [
    "memories, supersedes, history, fts, meta",
    "recall: origin/time index, history full-text index",
    "team sync: trusted objects, chain heads, own chain, refusals",
    "own chain: pushed_wall in the one HLC packing",
    "forget: purge the history of forgotten memories",
    "batch writes: full-text indexes filled once per batch",
    "push: bucket key, dirty log, own-rows indexes",
    "own counts kept by triggers, tombstones index",
    "redaction marks: text this store's rules already redacted",
    "batch-aware counts, own-rows-only dirty log, row count",
    "recall: stems kept per memory",
    "recall: document counts of frequent terms",
    "recall: the index's terms for non-ASCII text, tolerant counting",
    "recall: stems again where the stemmer was fixed",
]

_SQL = """
CREATE TABLE schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE memories (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, project TEXT NOT NULL,
    kind TEXT NOT NULL, content TEXT NOT NULL, keywords TEXT NOT NULL DEFAULT '',
    keywords_json TEXT NOT NULL DEFAULT '[]', importance REAL NOT NULL,
    local_importance REAL NOT NULL, author TEXT NOT NULL, editor TEXT NOT NULL,
    created_at INTEGER NOT NULL, hlc_wall INTEGER NOT NULL, hlc_counter INTEGER NOT NULL,
    supersedes_json TEXT NOT NULL DEFAULT '[]', deleted INTEGER NOT NULL DEFAULT 0,
    delete_reason TEXT, origin TEXT NOT NULL,
    visibility TEXT NOT NULL CHECK (visibility IN ('team', 'private')),
    seen_count INTEGER NOT NULL DEFAULT 1, updated_at INTEGER NOT NULL, norm_hash TEXT,
    transport TEXT NOT NULL DEFAULT 'local', signer TEXT, signer_name TEXT,
    verified INTEGER NOT NULL DEFAULT 0, received_at INTEGER, snapshot_seq INTEGER,
    bucket_key INTEGER, stems TEXT);
CREATE TABLE supersedes (
    old_id TEXT NOT NULL, new_id TEXT NOT NULL, PRIMARY KEY (old_id, new_id)) WITHOUT ROWID;
CREATE TABLE history (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, record_json TEXT NOT NULL,
    local_importance REAL NOT NULL, seen_count INTEGER NOT NULL, updated_at INTEGER NOT NULL,
    transport TEXT NOT NULL, signer TEXT, signer_name TEXT, verified INTEGER NOT NULL DEFAULT 0,
    received_at INTEGER, snapshot_seq INTEGER, replaced_at INTEGER NOT NULL);
CREATE VIRTUAL TABLE memories_fts USING fts5 (content, keywords, content = 'memories',
    content_rowid = 'rowid', tokenize = 'porter unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE history_fts USING fts5 (
    content, keywords, tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE fts_batch (one INTEGER PRIMARY KEY CHECK (one = 1));
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
WHEN NOT EXISTS (SELECT 1 FROM fts_batch) BEGIN
    INSERT INTO memories_fts (rowid, content, keywords)
    VALUES (new.rowid, new.content, new.keywords);
END;
CREATE TABLE own_chain (
    project TEXT PRIMARY KEY, seq INTEGER NOT NULL, hash TEXT NOT NULL, manifest BLOB NOT NULL,
    digests_json TEXT NOT NULL, pushed_wall INTEGER NOT NULL, pushed_count INTEGER NOT NULL,
    reset_at INTEGER NOT NULL DEFAULT 0, pushed_at INTEGER NOT NULL);
CREATE TABLE push_dirty (seq INTEGER PRIMARY KEY, project TEXT NOT NULL, id TEXT NOT NULL);
CREATE TABLE own_counts (project TEXT NOT NULL, editor TEXT NOT NULL, rows INTEGER NOT NULL,
    live INTEGER NOT NULL, PRIMARY KEY (project, editor)) WITHOUT ROWID;
CREATE TABLE store_counts (one INTEGER PRIMARY KEY CHECK (one = 1), memories INTEGER NOT NULL);
CREATE TABLE term_counts (term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID;
"""

_MEMORY = (
    "INSERT INTO memories (id, project, kind, content, keywords, keywords_json, importance, "
    "local_importance, author, editor, created_at, hlc_wall, hlc_counter, origin, visibility, "
    "updated_at, transport, signer, verified, stems) "
    "VALUES (?, 'app', 'note', ?, ?, ?, 0.5, 0.5, ?, ?, ?, ?, 0, 'cli', 'team', ?, ?, ?, ?, "
    "'stale stems')"
)


def pre_baseline_store(path: Path, memories: list[tuple[str, str, str]], now: int) -> None:
    """Write at ``path`` a store of the pre-release schema holding ``memories``
    (id, content, editor: pulled and verified when the editor is not ``ann``), each with
    one older version in history, and wrong derived counts."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")  # as every store of theirs
    with conn:
        conn.executescript(_SQL)
        conn.executemany(
            "INSERT INTO schema_migrations VALUES (?, ?, 0)", enumerate(OLD_MIGRATIONS, 1)
        )
        conn.execute("INSERT INTO meta VALUES ('store_id', 'old'), ('hlc', ?)", (f"{now}:0",))
        for i, (mid, content, editor) in enumerate(memories):
            local = editor == "ann"
            transport, signer = ("local", None) if local else ("folder", editor)
            conn.execute(
                _MEMORY,
                (mid, content, "old", '["old"]', editor, editor, now - 10, now - 5 + i, now,
                 transport, signer, int(not local)),
            )  # fmt: skip
            old = Record(
                id=mid, project="app", kind="note", content=f"{content} (draft)", keywords=(),
                importance=0.5, author=editor, editor=editor, created_at=now - 10,
                hlc=Hlc(now - 10, 0), origin="cli",
            )  # fmt: skip
            conn.execute(
                "INSERT INTO history (id, record_json, local_importance, seen_count, "
                "updated_at, transport, replaced_at) VALUES (?, ?, 0.5, 1, ?, ?, ?)",
                (mid, json.dumps(old.to_wire(), sort_keys=True), now - 10, transport, now),
            )
        conn.execute("INSERT INTO store_counts VALUES (1, 999)")
        conn.execute("INSERT INTO own_counts VALUES ('app', 'ann', 999, 999)")
    conn.close()
