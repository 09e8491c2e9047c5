"""The writer's own summary and live team counts, served from counters the store keeps.

``own_summary`` (what the manifest's record count comes from: a wrong count makes
every reader refuse the snapshot) and ``own_team_counts`` were covering-index scans
of every own row (~21 ms at 100k rows, paid by writer and reader on every sync).
The store keeps ``own_counts`` per (project, editor) in its one writer; these tests
hold the counters equal to the scan over random write sequences through every write
path (remember, share, forget and its purge, pulls, drops), and show that the cost
no longer follows the store's size (SQLite virtual-machine steps, not time).
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.writer import Batch, load_rows, write
from sealmem.client.sync import replica
from sealmem.client.sync.apply import apply_versions
from sealmem.protocol.hlc import ZERO, Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.support.versions import EDITORS, versions

NOW = 1_800_000_000_000
ME = "alice"  # one of the editors the pulled versions use, so own and pulled rows mix
PULLED = Provenance("folder", "bob", "bob", True, NOW, 1)
PROJECTS = ["proj", "other"]
CUTOFFS = [0, 2, 5, NOW - 10, NOW + 10**6]


@contextmanager
def _store(root: Path) -> Iterator[MemoryStore]:
    ticks = iter(range(NOW, NOW + 10**9))
    store = MemoryStore.open(root / "store.db", author=ME, clock=lambda: next(ticks))
    try:
        yield store
    finally:
        store.close()


def scan_summary(
    conn: sqlite3.Connection, me: str, project: str, collect_before: int
) -> tuple[int, Hlc, int]:
    """The reference: ``own_summary`` as a scan of every own row (the code before)."""
    count, wall, due = conn.execute(
        "SELECT COUNT(*), MAX(hlc_wall), "
        "COALESCE(SUM(CASE WHEN deleted AND hlc_wall <= ? THEN 1 ELSE 0 END), 0) "
        "FROM memories WHERE project = ? AND editor = ? AND visibility = 'team'",
        (collect_before, project, me),
    ).fetchone()
    if not count:
        return 0, ZERO, 0
    (counter,) = conn.execute(
        "SELECT MAX(hlc_counter) FROM memories WHERE project = ? AND editor = ? "
        "AND visibility = 'team' AND hlc_wall = ?",
        (project, me, wall),
    ).fetchone()
    return int(count), Hlc(int(wall), int(counter)), int(due)


def scan_team_counts(conn: sqlite3.Connection, me: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT project, COUNT(*) FROM memories WHERE editor = ? AND visibility = 'team' "
        "AND deleted = 0 GROUP BY project",
        (me,),
    )
    return {str(p): int(n) for p, n in rows}


def check_counters(conn: sqlite3.Connection) -> None:
    kept = {
        (str(r[0]), str(r[1])): (int(r[2]), int(r[3]))
        for r in conn.execute("SELECT project, editor, rows, live FROM own_counts")
        if r[2] or r[3]
    }
    scanned = {
        (str(r[0]), str(r[1])): (int(r[2]), int(r[3]))
        for r in conn.execute(
            "SELECT project, editor, COUNT(*), SUM(deleted = 0) FROM memories "
            "WHERE visibility = 'team' GROUP BY project, editor"
        )
    }
    assert kept == scanned
    for editor in EDITORS:
        assert replica.own_team_counts(conn, editor) == scan_team_counts(conn, editor)
        for project in PROJECTS:
            mine = scan_team_counts(conn, editor).get(project)
            got = replica.own_team_counts(conn, editor, project)
            assert got == ({} if mine is None else {project: mine})
            for cutoff in CUTOFFS:
                assert replica.own_summary(conn, editor, project, cutoff) == scan_summary(
                    conn, editor, project, cutoff
                )


def _ids(conn: sqlite3.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute("SELECT id FROM memories ORDER BY id")]


def _pick(conn: sqlite3.Connection, i: int) -> str | None:
    ids = _ids(conn)
    return ids[i % len(ids)] if ids else None


ops = st.one_of(
    st.tuples(st.just("remember"), st.sampled_from(PROJECTS), st.booleans(), st.integers(0, 5)),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("share"), st.integers(0, 50)),
    st.tuples(st.just("pull"), st.lists(versions(), min_size=1, max_size=6)),
    st.tuples(st.just("drop"), st.integers(0, 50)),
)


def _run(store: MemoryStore, op: tuple[object, ...]) -> None:
    conn = store.connection
    what = op[0]
    if what == "remember":
        _, project, private, n = op
        store.remember(f"memory number {n}", project=str(project), private=bool(private))
    elif what in ("forget", "share"):
        mid = _pick(conn, int(op[1]))  # type: ignore[call-overload]
        if mid is None:
            return
        mem = store.get(mid)
        if mem.record.deleted:
            return
        if what == "forget":
            store.forget(mid, reason="wrong")
        elif mem.record.visibility == "private":
            store.share(mid)
    elif what == "pull":
        with transaction(conn):
            apply_versions(conn, op[1], PULLED, NOW)  # type: ignore[arg-type]
    else:
        mid = _pick(conn, int(op[1])) if len(op) > 1 else None  # type: ignore[call-overload]
        with transaction(conn):
            if what == "drop" and mid is not None:  # what dropping a revoked writer does
                write(conn, Batch(removed=[load_rows(conn, [mid])[mid]], replaced_at=NOW))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, min_size=1, max_size=14))
def test_the_counters_always_equal_the_scan(sequence: list[tuple[object, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp, _store(Path(tmp)) as store:
        check_counters(store.connection)
        for op in sequence:
            _run(store, op)
            check_counters(store.connection)


def _steps(conn: sqlite3.Connection, call: object) -> int:
    """SQLite virtual-machine steps ``call`` runs (the progress handler every step)."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(count, 1)
    try:
        call()  # type: ignore[operator]
    finally:
        conn.set_progress_handler(None, 0)
    return steps


def _pull_own(conn: sqlite3.Connection, start: int, n: int) -> None:
    """``n`` team memories edited by ME, as a pull stores them (two tombstones in the
    first batch: what the summary still reads is the tombstones of the grace period)."""
    records = [
        Record(
            id=new_memory_id(NOW - 10**7 + start + i, (start + i).to_bytes(10, "big")),
            project="proj",
            kind="note",
            content="" if start + i in (0, 50) else f"note {start + i}",
            keywords=(),
            importance=0.5,
            author=ME,
            editor=ME,
            created_at=NOW - 10**7,
            hlc=Hlc(NOW - 10**7 + start + i, 0),
            deleted=start + i in (0, 50),
        )
        for i in range(n)
    ]
    with transaction(conn):
        apply_versions(conn, records, PULLED, NOW)


def test_the_summary_costs_the_same_in_a_small_and_a_large_store(tmp_path: Path) -> None:
    """The finding: both reads scanned every own row, so one change cost more in a larger
    store.  Now 40x the rows costs about the same number of SQLite steps."""
    with _store(tmp_path) as store:
        conn = store.connection
        _pull_own(conn, 0, 100)

        def summary() -> None:  # every row is within the grace period, as in a young store
            replica.own_summary(conn, ME, "proj", NOW - 10**8)
            replica.own_team_counts(conn, ME)

        small = _steps(conn, summary)
        _pull_own(conn, 100, 3900)
        large = _steps(conn, summary)
        for cutoff in (NOW - 10**8, NOW - 10**7 + 2000, NOW):
            got = replica.own_summary(conn, ME, "proj", cutoff)
            assert got == scan_summary(conn, ME, "proj", cutoff)
        assert replica.own_summary(conn, ME, "proj", NOW)[0] == 4000
        assert large < 2 * small + 50, (small, large)
