"""The dirty log keeps our rows only, and the per-row bookkeeping a batch does at once.

Schema version 10: ``push_editor`` names the member this store pushes as; the dirty log
(``push_dirty``) then holds the ids of rows that member wrote before or after a write,
never a teammate's row that was never ours (a first full sync used to log every pulled
id, and the next push rebuilt every bucket to find them unchanged).  The batch writer
counts the rows it inserts (``own_counts``, ``store_counts``) and logs them once per
batch.  Property: over random write sequences through every write path, the log covers
every change of what we publish and holds nothing else, and the counters equal a scan.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client.store import journal
from sealmem.client.store.connection import transaction
from sealmem.client.store.rows import MEMORY_COLUMNS
from sealmem.client.store.writer import Batch, write
from sealmem.client.sync import replica
from sealmem.client.sync.apply import apply_versions
from sealmem.client.sync.engine import sync
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.sync.conftest import World
from tests.sync.test_own_counts import ME, PULLED, _run, _store, check_counters, ops

NOW = 1_800_000_000_000

_PUBLISHED = (
    "SELECT id, project, kind, content, keywords_json, importance, author, created_at, "
    "hlc_wall, hlc_counter, supersedes_json, deleted, delete_reason, origin "
    "FROM memories WHERE editor = ? AND visibility = 'team'"
)


def _published(conn: sqlite3.Connection) -> dict[str, tuple[object, ...]]:
    """What our snapshots carry, per id: every published field of our team rows."""
    return {str(r[0]): tuple(r) for r in conn.execute(_PUBLISHED, (ME,))}


def _ours_ever(conn: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT id FROM memories WHERE editor = ?", (ME,))}


def _logged(conn: sqlite3.Connection, after: int) -> set[str]:
    return {str(r[0]) for r in conn.execute("SELECT id FROM push_dirty WHERE seq > ?", (after,))}


def _last_seq(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(MAX(seq), 0) FROM push_dirty").fetchone()[0])


def _row_count(conn: sqlite3.Connection) -> tuple[int, int]:
    kept = conn.execute("SELECT memories FROM store_counts").fetchone()[0]
    counted = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    return int(kept), int(counted)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, min_size=1, max_size=14))
def test_the_log_covers_every_change_of_ours_and_nothing_else(
    sequence: list[tuple[object, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp, _store(Path(tmp)) as store:
        conn = store.connection
        with transaction(conn):
            replica.claim_pushes(conn, ME)
        for op in sequence:
            before, ours_before, seq = _published(conn), _ours_ever(conn), _last_seq(conn)
            _run(store, op)
            after = _published(conn)
            changed = {i for i in before.keys() | after.keys() if before.get(i) != after.get(i)}
            logged = _logged(conn, seq)
            assert changed <= logged, op
            assert logged <= ours_before | _ours_ever(conn), op
            check_counters(conn)
            kept, counted = _row_count(conn)
            assert kept == counted, op


def _teammate_versions(n: int, editor: str = "bob") -> list[Record]:
    return [
        Record(
            id=new_memory_id(NOW - 50_000 + i, i.to_bytes(10, "big")),
            project="proj",
            kind="note",
            content=f"a teammate's note {i}",
            keywords=("k",),
            importance=0.5,
            author=editor,
            editor=editor,
            created_at=NOW - 50_000,
            hlc=Hlc(NOW - 50_000, i),
        )
        for i in range(n)
    ]


def test_a_pull_logs_a_teammates_row_only_where_it_replaces_ours(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        conn = store.connection
        mine = store.remember("our note, soon replaced by bob", project="proj").memory.record
        with transaction(conn):
            replica.claim_pushes(conn, ME)
            conn.execute("DELETE FROM push_dirty")
        pulled = _teammate_versions(40)
        with transaction(conn):
            apply_versions(conn, pulled, PULLED, NOW)
        assert _logged(conn, 0) == set()
        takeover = mine.evolve(editor="bob", hlc=Hlc(mine.hlc.wall + 1, 0), content="bob's")
        with transaction(conn):
            apply_versions(conn, [takeover], PULLED, NOW)
        assert _logged(conn, 0) == {mine.id}  # our bucket loses it: logged
        assert _row_count(conn) == (41, 41)


@pytest.mark.slow
def test_a_first_full_sync_logs_no_pulled_row(world: World) -> None:
    """Over a real folder: a pull of a teammate's memories logs none of them (our next
    push rebuilt every bucket for them), only our row that a teammate's tombstone took."""
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    for i in range(30):
        alice.remember(f"alice's note {i} about the deploy script")
    ours = alice.remember("one of alice's, bob forgets it")
    alice.sync()
    bob.sync()
    for i in range(60):
        bob.remember(f"bob's note {i} about the build cache")
    bob.store.forget(ours.id, reason="wrong")
    bob.sync()
    conn = alice.store.connection
    seq = _last_seq(conn)
    summary = sync(alice.t, clock=alice.clock, push=False)
    assert summary.pulled_new == 60
    assert _logged(conn, seq) == {ours.id}


def test_another_member_key_logs_every_bucket(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        conn = store.connection
        with transaction(conn):
            conn.execute(
                "INSERT INTO own_chain (project, seq, hash, manifest, digests_json, pushed_wall, "
                "pushed_count, pushed_at) VALUES ('proj', 1, 'h', x'00', '{}', 0, 0, 0)"
            )
            assert replica.claim_pushes(conn, ME)
            conn.execute("DELETE FROM push_dirty")
            assert not replica.claim_pushes(conn, ME)
            assert _logged(conn, 0) == set()
            assert replica.claim_pushes(conn, "someone-else")
        assert replica.pushes_as(conn) == "someone-else"
        assert _logged(conn, 0) == {"*"}


def _bobs(i: int) -> Record:
    return Record(
        id=new_memory_id(NOW - 1_000 + i, bytes([i]) * 10), project="proj", kind="note",
        content=f"bob's memory {i}", keywords=(), importance=0.5, author="bob", editor="bob",
        created_at=NOW - 1_000, hlc=Hlc(NOW - 1_000, i),
    )  # fmt: skip


def test_the_journal_reads_the_row_count_kept_by_the_store(tmp_path: Path) -> None:
    """No ``COUNT(*)`` of every row at each commit; the sidecar's count stays exact through
    local writes, batched pulls, forget and a drop."""
    with _store(tmp_path) as store:
        conn = store.connection
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        try:
            mid = store.remember("a note to count", project="proj").memory.id
        finally:
            conn.set_trace_callback(None)
        assert statements
        assert not [s for s in statements if "COUNT(*) FROM MEMORIES" in s.upper()], statements
        with transaction(conn):
            apply_versions(conn, _teammate_versions(25), PULLED, NOW)
        store.forget(mid, reason="wrong")
        with transaction(conn):  # what dropping a revoked writer's only version does
            last = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories ORDER BY rowid DESC"
            ).fetchone()
            write(conn, Batch(removed=[last], replaced_at=NOW))
        tally, _damage = journal.read(store.path)
        assert tally is not None
        assert tally.memories == 25 == _row_count(conn)[1]
