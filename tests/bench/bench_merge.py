"""Merging pulled versions into a store (``apply_versions``), beside its limits, same run.

    python tests/bench/bench_merge.py                 # 20k versions, batches of 500
    python tests/bench/bench_merge.py --versions 5000

Rows, each on a fresh store (real SQLite file, WAL), the same synthetic versions
(~170 characters of text, 2 keywords, one in three with a supersede link):

- ``apply_versions``: what a pull runs per chunk (redaction of each version, one
  read of the batch's rows, the pure merge, the one writer and its derived tables);
- the same without redaction (the rules swapped for a no-op in this process):
  what the merge and the store cost, apart from the redaction rules;
- ``apply_versions`` again over the same versions (a re-pull: nothing changes);
- a second pull where every version is newer (updates: history, FTS replace);
- limits on plain ``sqlite3``, on the first schema's tables (:data:`LIMIT_SCHEMA`:
  ``memories`` with its first four indexes, and its full-text index): one
  ``executemany`` per batch with a per-row FTS trigger, and ``executemany`` with the
  FTS index filled once per batch;
- the second limit on the store's own tables (a fresh store's ``memories``, every index
  and the full-text index of today's schema, rows built before the clock starts): what
  the engine costs for the tables the store keeps, apart from the Python of a write.

Prints versions/s and the load average (2 shared cores: compare rows of one run).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.rows import MEMORY_VALUE_COLUMNS, memory_row
from sealmem.client.sync import apply
from sealmem.crypto import SUITE
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.snapshot import bucket_key

LIMIT_SCHEMA = """
CREATE TABLE memories (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, project TEXT NOT NULL,
    kind TEXT NOT NULL, content TEXT NOT NULL, keywords TEXT NOT NULL DEFAULT '',
    keywords_json TEXT NOT NULL DEFAULT '[]', importance REAL NOT NULL,
    local_importance REAL NOT NULL, author TEXT NOT NULL, editor TEXT NOT NULL,
    created_at INTEGER NOT NULL, hlc_wall INTEGER NOT NULL, hlc_counter INTEGER NOT NULL,
    supersedes_json TEXT NOT NULL DEFAULT '[]', deleted INTEGER NOT NULL DEFAULT 0,
    delete_reason TEXT, origin TEXT NOT NULL, visibility TEXT NOT NULL,
    seen_count INTEGER NOT NULL DEFAULT 1, updated_at INTEGER NOT NULL, norm_hash TEXT,
    transport TEXT NOT NULL DEFAULT 'local', signer TEXT, signer_name TEXT,
    verified INTEGER NOT NULL DEFAULT 0, received_at INTEGER, snapshot_seq INTEGER,
    stems TEXT, source TEXT, grams TEXT);
CREATE INDEX memories_project_updated ON memories (project, updated_at);
CREATE INDEX memories_updated ON memories (updated_at);
CREATE INDEX memories_dedup ON memories (project, norm_hash) WHERE deleted = 0;
CREATE INDEX memories_kind ON memories (kind);
CREATE VIRTUAL TABLE memories_fts USING fts5 (content, keywords, content = 'memories',
    content_rowid = 'rowid', tokenize = 'porter unicode61 remove_diacritics 2');
"""
"""The limits' schema: the tables the engine limit was first measured on (the first
schema's ``memories``, four indexes, its full-text index), kept as they were (but for
the nullable ``source`` column, which every row the store writes now names) so that the
limit rows compare across versions of the store."""

FTS_TRIGGER = """
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, keywords)
    VALUES (new.rowid, new.content, new.keywords);
END;
"""

NOW = time.time_ns() // 1_000_000
PULLED = Provenance("folder", "alice", "alice", True, NOW, 1)
from vocab import WORDS  # noqa: E402 - tests/bench is on sys.path when run as a script


def versions(n: int, wall: int) -> list[Record]:
    out = []
    for i in range(n):
        text = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(22))
        out.append(
            Record(
                id=new_memory_id(NOW - 100_000_000 + i, i.to_bytes(10, "big")),
                project="webapp",
                kind="note",
                content=f"{text} (item {i})",
                keywords=(WORDS[i % len(WORDS)], WORDS[(i + 5) % len(WORDS)]),
                importance=0.5,
                author="alice",
                editor="alice",
                created_at=NOW - 100_000_000,
                hlc=Hlc(wall, i % 60_000),
                supersedes=(new_memory_id(NOW - 200_000_000, bytes(10)),) if i % 3 == 0 else (),
            )
        )
    return out


def batches(records: list[Record], size: int) -> list[list[Record]]:
    return [records[k : k + size] for k in range(0, len(records), size)]


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of ``fn`` (CPU time is what a loaded machine distorts least)."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def pull(store: MemoryStore, chunks: list[list[Record]]) -> None:
    conn = store.connection
    for chunk in chunks:
        with transaction(conn):
            apply.apply_versions(conn, chunk, PULLED, NOW)


def plain(
    path: Path, chunks: list[list[Record]], *, fts_once: bool, store_schema: bool = False
) -> tuple[float, float]:
    """The limit: the same rows into the same schema with plain sqlite3 (``store_schema``:
    into a fresh store's tables, its full-text index with the grams column)."""
    if store_schema:
        MemoryStore.open(path, author="bob", clock=lambda: NOW).close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    if not store_schema:
        conn.executescript(LIMIT_SCHEMA if fts_once else LIMIT_SCHEMA + FTS_TRIGGER)
    columns = "rowid, content, keywords, grams" if store_schema else "rowid, content, keywords"
    rows = [
        [
            dict(zip(MEMORY_VALUE_COLUMNS, memory_row(
                r, provenance=PULLED, local_importance=0.5, seen_count=1, updated_at=NOW
            ), strict=True))
            for r in chunk
        ]
        for chunk in chunks
    ]  # fmt: skip
    if store_schema:  # a pulled row is stored with its bucket key (apply_versions)
        for chunk_rows in rows:
            for row in chunk_rows:
                row["bucket_key"] = bucket_key(SUITE, row["id"])
    names = list(rows[0][0])
    sql = f"INSERT INTO memories ({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})"
    start, cpu = time.perf_counter(), time.process_time()
    for chunk in rows:
        conn.execute("BEGIN")
        conn.executemany(sql, chunk)
        if fts_once:
            conn.execute(
                f"INSERT INTO memories_fts ({columns}) SELECT {columns} "
                "FROM memories WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([v["id"] for v in chunk]),),
            )
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start, time.process_time() - cpu
    conn.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    n = args.versions
    first = batches(versions(n, NOW - 100_000), args.batch)
    newer = batches(versions(n, NOW - 50_000), args.batch)
    print(f"{n} versions in batches of {args.batch}; load average {os.getloadavg()}")
    rows: list[tuple[str, tuple[float, float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = MemoryStore.open(root / "a.db", author="bob", clock=lambda: NOW)
        rows.append(("apply_versions, new ids (sealmem)", timed(lambda: pull(store, first))))
        rows.append(("apply_versions, the same again (re-pull)", timed(lambda: pull(store, first))))
        rows.append(("apply_versions, every id newer (updates)", timed(lambda: pull(store, newer))))
        store.close()
        store = MemoryStore.open(root / "b.db", author="bob", clock=lambda: NOW)
        real = apply.redact_versions
        apply.redact_versions = lambda conn, records, held: [(r, {}) for r in records]  # type: ignore[assignment]
        try:
            rows.append(
                ("apply_versions, new ids, redaction off", timed(lambda: pull(store, first)))
            )
        finally:
            apply.redact_versions = real
        store.close()
        rows.append(("limit: sqlite3 executemany, per-row FTS trigger",
                     plain(root / "c.db", first, fts_once=False)))  # fmt: skip
        rows.append(("limit: sqlite3 executemany, FTS once per batch",
                     plain(root / "d.db", first, fts_once=True)))  # fmt: skip
        rows.append(("limit: the same, on the store's own tables",
                     plain(root / "e.db", first, fts_once=True, store_schema=True)))  # fmt: skip
    print(f"  {'':<50} {'versions/s':>10} {'per CPU s':>10} {'wall s':>7}")
    for name, (wall, cpu) in rows:
        print(f"  {name:<50} {n / wall:>10,.0f} {n / cpu:>10,.0f} {wall:>7.2f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
