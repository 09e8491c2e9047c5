"""The one writer keeps the derived tables as their rebuild from scratch computes them.

``apply_versions`` writes a batch's winners and losers through
:func:`sealmem.client.store.writer.write` (a few statements per batch, the full-text
index filled once), which keeps every derived table itself.  Over random version
sequences (ties, tombstones, importance floors, supersedes, local versions already
there) the derived tables after the pulls must equal what
:func:`sealmem.client.store.derived.rebuild` computes from ``memories`` and ``history``.
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
from sealmem.client.store import derived
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.redaction import texts
from sealmem.client.store.writer import Batch, load_rows, write, write_version
from sealmem.client.sync.apply import apply_versions
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.support.versions import IDS, version_lists, versions

NOW = 1_800_000_000_000
PULLED = Provenance("folder", "alice", "alice", True, NOW, 1)
WORDS = ["a", "b", "use", "uv", "x" * 50, "db", "ci", "obsolete", "note", "款处", "emoji128293x"]


@contextmanager
def _store(root: Path, name: str) -> Iterator[MemoryStore]:
    store = MemoryStore.open(root / f"{name}.db", author="reader", clock=lambda: NOW)
    try:
        yield store
    finally:
        store.close()


def _contents(conn: sqlite3.Connection) -> dict[str, Any]:
    """The derived tables (and the rows, whose stems are derived), comparably."""
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
        "store_counts": conn.execute("SELECT * FROM store_counts").fetchall(),
        "own_counts": conn.execute(
            "SELECT * FROM own_counts WHERE rows != 0 ORDER BY project, editor"
        ).fetchall(),
        "term_counts": conn.execute("SELECT * FROM term_counts ORDER BY term").fetchall(),
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
def test_the_writer_keeps_the_derived_tables_as_their_rebuild(
    local: list[Record], batches: list[list[Record]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp, _store(Path(tmp), "s") as store:
        conn = store.connection
        with transaction(conn):
            for record in {r.id: r for r in local}.values():  # written here before the pulls
                write_version(
                    conn, record, provenance=Provenance.local(),
                    local_importance=record.importance, seen_count=1, updated_at=NOW - 1,
                )  # fmt: skip
        for pulled in batches:
            with transaction(conn):
                apply_versions(conn, pulled, PULLED, NOW)
            kept = _as_tuples(_contents(conn))
            with transaction(conn):
                derived.rebuild(conn)
            assert _as_tuples(_contents(conn)) == kept


def _terms_hold(conn: sqlite3.Connection) -> None:
    """While recall trusts ``term_counts`` (counted at the store's size), each term it
    holds is counted as the full-text index counts it."""
    at = conn.execute("SELECT counted FROM term_counts_at").fetchone()
    (size,) = conn.execute("SELECT memories FROM store_counts").fetchone()
    if at is None or at[0] != size:
        return
    vocab = "fts5vocab(main, memories_fts, row)"
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.terms_seen USING {vocab}")
    index = dict(conn.execute("SELECT term, doc FROM temp.terms_seen").fetchall())
    held = dict(conn.execute("SELECT term, docs FROM term_counts").fetchall())
    assert held == {term: index.get(term, 0) for term in held}


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(versions(), max_size=4),
    st.lists(
        st.tuples(version_lists, st.sets(st.sampled_from(IDS)), st.booleans()),
        min_size=1,
        max_size=4,
    ),
)
def test_the_derived_tables_hold_through_removals_and_a_lost_term_count(
    local: list[Record], steps: list[tuple[list[Record], set[str], bool]]
) -> None:
    """Batches of one (the local writes), pulls, removed winners and a store whose
    ``term_counts_at`` row is gone: after each, doctor finds no drift, the term counts
    recall trusts are the index's, and a reindex changes nothing else."""
    frequent = derived.FREQUENT_DOCS
    derived.FREQUENT_DOCS = 2  # terms counted in a store this small
    try:
        with tempfile.TemporaryDirectory() as tmp, _store(Path(tmp), "s") as store:
            conn = store.connection
            for record in {r.id: r for r in local}.values():
                with transaction(conn):
                    write_version(
                        conn, record, provenance=Provenance.local(),
                        local_importance=record.importance, seen_count=1, updated_at=NOW - 1,
                    )  # fmt: skip
                _terms_hold(conn)
            for pulled, gone, lost in steps:
                with transaction(conn):
                    if lost:
                        conn.execute("DELETE FROM term_counts_at")
                    apply_versions(conn, pulled, PULLED, NOW)
                    removed = list(load_rows(conn, gone).values())
                    write(conn, Batch(removed=removed, replaced_at=NOW))
                assert derived.drift(conn) == []
                _terms_hold(conn)
                kept = _as_tuples(_contents(conn))
                store.reindex()
                rebuilt = _as_tuples(_contents(conn))
                assert {**rebuilt, "term_counts": None} == {**kept, "term_counts": None}
                _terms_hold(conn)
    finally:
        derived.FREQUENT_DOCS = frequent


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


def test_a_single_remember_is_a_batch_of_one(tmp_path: Path) -> None:
    with _store(tmp_path, "writer") as store:
        mem = store.remember("the nightly job rotates the staging database password").memory
        found = store.connection.execute(
            "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
            "WHERE memories_fts MATCH 'nightly'"
        ).fetchall()
        assert [r[0] for r in found] == [mem.id]
        assert tuple(store.connection.execute("SELECT memories FROM store_counts").fetchone()) == (
            1,
        )


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
