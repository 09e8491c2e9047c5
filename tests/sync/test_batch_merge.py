"""The batched merge stores exactly what the per-version merge stores.

``apply_versions`` writes a batch's winners with
:func:`sealmem.client.store.batch.write_versions` (a few statements per batch, the
full-text index filled once).  The reference is the per-version path,
:func:`sealmem.client.store.batch.write_each` (one ``write_version`` per winner,
the per-row triggers) and :func:`~sealmem.client.store.batch.keep_each` (the pulled
versions that lost, one at a time).  Over random version sequences (ties, tombstones, importance
floors, supersedes, local versions already there) both stores must hold the same
rows byte for byte: memories (row ids included), history (sequence included),
supersede links, the clock, and the same full-text answers.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client import MemoryStore
from sealmem.client.store import batch
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.redaction import texts
from sealmem.client.sync import apply
from sealmem.client.sync.apply import apply_versions
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.support.versions import version_lists, versions

NOW = 1_800_000_000_000
PULLED = Provenance("folder", "alice", "alice", True, NOW, 1)
WORDS = ["a", "b", "use", "uv", "x" * 50, "db", "ci", "obsolete", "note"]


@contextmanager
def _store(root: Path, name: str) -> Iterator[MemoryStore]:
    store = MemoryStore.open(root / f"{name}.db", author="reader", clock=lambda: NOW)
    try:
        yield store
    finally:
        store.close()


def _contents(conn: sqlite3.Connection) -> dict[str, Any]:
    """Everything a merge writes, in a comparable form."""
    fts = {
        word: conn.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid",
            (f'"{word}"',),
        ).fetchall()
        for word in WORDS
    }
    history_fts = {
        word: conn.execute(
            "SELECT rowid FROM history_fts WHERE history_fts MATCH ? ORDER BY rowid",
            (f'"{word}"',),
        ).fetchall()
        for word in WORDS
    }
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    return {
        "memories": conn.execute("SELECT * FROM memories ORDER BY rowid").fetchall(),
        "history": conn.execute("SELECT * FROM history ORDER BY seq").fetchall(),
        "supersedes": conn.execute("SELECT * FROM supersedes ORDER BY old_id, new_id").fetchall(),
        "meta": conn.execute("SELECT * FROM meta WHERE key = 'hlc'").fetchall(),
        "fts": fts,
        "history_fts": history_fts,
    }


def _as_tuples(contents: dict[str, Any]) -> dict[str, Any]:
    return {
        key: [tuple(row) for row in value] if isinstance(value, list) else value
        for key, value in contents.items()
    }


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(versions(), max_size=4),
    st.lists(version_lists, min_size=1, max_size=3),
)
def test_the_batched_merge_stores_what_the_per_version_merge_stores(
    local: list[Record], batches: list[list[Record]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        root = Path(tmp)
        with _store(root, "batched") as batched, _store(root, "reference") as reference:
            for store in (batched, reference):  # versions written here before the pulls
                conn = store.connection
                with transaction(conn):
                    seen: set[str] = set()
                    for record in local:
                        if record.id not in seen:
                            seen.add(record.id)
                            batch.write_each(
                                conn,
                                [batch.Write(record, Provenance.local(), record.importance,
                                             1, NOW - 1, None)],
                            )  # fmt: skip
            for pulled in batches:
                with transaction(batched.connection):
                    fast = apply_versions(batched.connection, pulled, PULLED, NOW)
                patch.setattr(apply, "write_versions", batch.write_each)
                patch.setattr(apply, "keep_versions", batch.keep_each)
                with transaction(reference.connection):
                    slow = apply_versions(reference.connection, pulled, PULLED, NOW)
                patch.undo()
                assert fast == slow
                assert _as_tuples(_contents(batched.connection)) == _as_tuples(
                    _contents(reference.connection)
                )


def _new_versions(n: int) -> list[Record]:
    return [
        Record(
            id=new_memory_id(NOW - 10_000 + i, i.to_bytes(10, "big")),
            project="webapp",
            kind="note",
            content=f"the build cache of service {i} is keyed by the lockfile",
            keywords=("cache", f"svc{i}"),
            importance=0.5,
            author="alice",
            editor="alice",
            created_at=NOW - 10_000,
            hlc=Hlc(NOW - 10_000, i),
            supersedes=(new_memory_id(NOW - 20_000, bytes(10)),) if i % 3 == 0 else (),
        )
        for i in range(n)
    ]


def test_a_pulled_batch_reads_once_and_fills_the_full_text_index_once(tmp_path: Path) -> None:
    """The finding: each pulled version read its row twice and fed the full-text index
    through a per-row trigger (~150 us a row, a segment write per row).  Now a batch
    reads the rows of its ids once and writes the index's segments a bounded number of
    times, whatever its size, and recall still finds every pulled memory."""
    pulled = _new_versions(60)
    with _store(tmp_path, "reader") as store:
        conn = store.connection
        traced: list[str] = []
        conn.set_trace_callback(traced.append)
        with transaction(conn):
            first = apply_versions(conn, pulled, PULLED, NOW)
        changed = [r.evolve(content=f"{r.content}, not the image tag", hlc=Hlc(NOW - 5, 0))
                   for r in pulled[:20]]  # fmt: skip
        with transaction(conn):
            second = apply_versions(conn, changed, PULLED, NOW)
        conn.set_trace_callback(None)
        assert (first.new, second.updated) == (60, 20)
        row_reads = [s for s in traced if s.startswith("SELECT rowid, id, project")]
        segment_writes = [s for s in traced if "'memories_fts_data'" in s]
        assert len(row_reads) == 2  # one per batch
        assert len(segment_writes) <= 12  # per batch, not per row (was ~3 a row)
        hits = conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'lockfile'"
        ).fetchone()[0]
        tagged = conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'image'"
        ).fetchone()[0]
        assert (hits, tagged) == (60, 20)
        found = store.recall("image tag", k=50, project="webapp")
        # the 20 that say it first; their session neighbours may follow as context
        assert {h.memory.id for h in found[:20]} == {r.id for r in changed}
        conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")


def test_a_single_remember_still_goes_through_the_triggers(tmp_path: Path) -> None:
    with _store(tmp_path, "writer") as store:
        mem = store.remember("the nightly job rotates the staging database password").memory
        found = store.connection.execute(
            "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
            "WHERE memories_fts MATCH 'nightly'"
        ).fetchall()
        assert [r[0] for r in found] == [mem.id]
        assert store.connection.execute("SELECT count(*) FROM fts_batch").fetchone()[0] == 0


def test_a_secret_in_a_keyword_is_redacted_in_every_batch_and_not_remembered(
    tmp_path: Path,
) -> None:
    """Clean keywords are remembered between batches (they repeat); one holding a secret
    is redacted every time it comes, and never kept in the process."""
    secret = "ghp_" + "a1B2c3D4" * 5
    first, second = _new_versions(2)
    with _store(tmp_path, "reader") as store:
        conn = store.connection
        for record in (first, second):
            with transaction(conn):
                done = apply_versions(
                    conn, [record.evolve(keywords=("cache", secret))], PULLED, NOW
                )
            assert done.redacted == 1
        stored = conn.execute("SELECT keywords_json FROM memories").fetchall()
        assert all(secret not in row[0] and "[REDACTED:github_token]" in row[0] for row in stored)
        assert "cache" in texts._CLEAN_WORDS
        assert secret not in texts._CLEAN_WORDS
