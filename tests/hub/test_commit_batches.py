"""Batches of writes on the SQLite hub (:meth:`GroupCommit.batch`): the committer thread
runs the PUTs queued together, each in its own savepoint, then commits once.

A batch must answer each write exactly as that write run alone would (stored, or
refused with its own error, nothing of it kept), with one commit for the lot; a
transaction the engine ends under one write fails that write and those before it
in the batch (none stored), and the rest run in a new transaction; a failed commit
fails every write of the batch.  The hypothesis test compares a batch with the same
writes run one by one through ``tx``."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.hub.storage import StorageError
from sealmem.hub.storage import group as group_commit
from sealmem.hub.storage.dbfile import SQLiteDb
from sealmem.hub.storage.group import GroupCommit

from .test_group_commit import _rows, wal_commits


def _db(path: Path) -> SQLiteDb:
    db = SQLiteDb(path, None, grouped=True)
    db.set_up(lambda conn: conn.execute("CREATE TABLE t (a INTEGER PRIMARY KEY)"))
    return db


def _deferred_fk_group(path: Path) -> GroupCommit:
    """The write side of a file whose ``child`` rows name ``parent`` rows through a
    deferred foreign key: checked only at COMMIT, so a commit can fail."""
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        setup.execute(
            "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER "
            "REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
        )
    setup.close()

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    return GroupCommit(connect)


class Refused(Exception):
    """A job's own refusal, after its insert."""


def _job(db: SQLiteDb, values: list[int], refuse: str = "") -> Callable[[], object]:
    """Insert ``values`` (one write each, as a PUT's storage calls); ``refuse``: raise
    inside the last write ("inside", as a manifest's verification does) or after it."""

    def job() -> object:
        for i, value in enumerate(values):
            with db.tx() as conn:
                conn.execute("INSERT INTO t VALUES (?)", (value,))
                if refuse == "inside" and i == len(values) - 1:
                    raise Refused(values)
        if refuse == "after":
            raise Refused(values)
        return values

    return job


def _group(db: SQLiteDb) -> GroupCommit:
    group = db.group
    assert group is not None
    return group


def test_a_batch_commits_once_and_a_refused_write_leaves_the_others(tmp_path: Path) -> None:
    db = _db(tmp_path / "t.db")
    try:
        group = _group(db)
        before = (group.commits, wal_commits(tmp_path / "t.db"))
        outcomes = group.batch(
            [
                _job(db, [1]),
                _job(db, [90, 91], refuse="inside"),  # 90 stays: as a write of its own
                _job(db, [80], refuse="after"),  # refused once its write is done: kept
                _job(db, [2, 3]),
                _job(db, [1]),  # the primary key: refused by the engine
                _job(db, [4]),
            ]
        )
        after = (group.commits, wal_commits(tmp_path / "t.db"))
    finally:
        db.close()
    assert [value for value, _ in outcomes] == [[1], None, None, [2, 3], None, [4]]
    assert isinstance(outcomes[1][1], Refused)
    assert isinstance(outcomes[2][1], Refused)
    assert isinstance(outcomes[4][1], StorageError)
    assert "UNIQUE constraint failed" in str(outcomes[4][1])
    assert _rows(tmp_path / "t.db") == {1, 2, 3, 4, 80, 90}
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)  # one commit, in the WAL


def test_a_transaction_ended_under_a_write_fails_it_and_those_before_it(tmp_path: Path) -> None:
    """The engine rolls everything back (a full disk): the writes before it in the batch
    are told, none stored; the writes after it run in a transaction of their own."""
    db = _db(tmp_path / "t.db")

    def lose_everything() -> object:
        with db.tx() as conn:
            conn.execute("INSERT INTO t VALUES (20)")
            conn.execute("ROLLBACK")  # what the engine does on SQLITE_FULL
            raise sqlite3.OperationalError("database or disk is full")

    try:
        outcomes = _group(db).batch([_job(db, [1]), lose_everything, _job(db, [3])])
        assert _group(db).batch([_job(db, [4])]) == [([4], None)]
    finally:
        db.close()
    assert isinstance(outcomes[0][1], StorageError)
    assert isinstance(outcomes[1][1], StorageError)
    assert "disk is full" in str(outcomes[1][1])
    assert outcomes[2] == ([3], None)
    assert _rows(tmp_path / "t.db") == {3, 4}


def test_a_failed_commit_fails_every_write_of_the_batch(tmp_path: Path) -> None:
    """A deferred foreign key is checked only at COMMIT: the commit fails, so every write
    of the batch fails with it (none was answered, none is stored)."""
    path = tmp_path / "fk.db"
    group = _deferred_fk_group(path)

    def insert(sql: str) -> Callable[[], object]:
        def job() -> object:
            with group.tx() as conn:
                conn.execute(sql)
            return sql

        return job

    try:
        outcomes = group.batch(
            [insert("INSERT INTO parent VALUES (1)"), insert("INSERT INTO child VALUES (1, 7)")]
        )
        again = group.batch([insert("INSERT INTO parent VALUES (2)")])
    finally:
        group.close()
    assert all(value is None and isinstance(error, StorageError) for value, error in outcomes)
    assert "FOREIGN KEY" in str(outcomes[0][1])
    assert again == [("INSERT INTO parent VALUES (2)", None)]
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT id FROM parent").fetchall() == [(2,)]
        assert check.execute("SELECT COUNT(*) FROM child").fetchone()[0] == 0
    check.close()


_JOBS = st.lists(
    st.tuples(
        st.lists(st.integers(0, 12), min_size=1, max_size=3),
        st.sampled_from(["", "inside", "after"]),
    ),
    min_size=1,
    max_size=12,
)


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(jobs=_JOBS)
def test_a_batch_answers_and_stores_as_the_writes_one_by_one(
    tmp_path_factory: object, jobs: list[tuple[list[int], str]]
) -> None:
    base = tmp_path_factory.mktemp("batch")  # type: ignore[attr-defined]
    batched, alone = _db(base / "batched.db"), _db(base / "alone.db")
    try:
        outcomes = _group(batched).batch([_job(batched, v, r) for v, r in jobs])
        expected: list[tuple[object, type[BaseException] | None]] = []
        for values, refuse in jobs:
            try:
                expected.append((_job(alone, values, refuse)(), None))
            except (Refused, StorageError) as exc:
                expected.append((None, type(exc)))
    finally:
        batched.close()
        alone.close()
    assert [(v, None if e is None else type(e)) for v, e in outcomes] == expected
    assert _rows(base / "batched.db") == _rows(base / "alone.db")


def test_a_transaction_ended_outside_a_savepoint_stores_nothing_that_is_answered_failed(
    tmp_path: Path,
) -> None:
    """The engine may end the transaction under a statement outside any ``tx`` of the
    job (a read on the write connection hitting an I/O error or a full disk): the writes
    before it fail, none stored; a ``tx`` the same job opens afterwards is refused (a
    SAVEPOINT outside a transaction would commit on its own, under an answer of failure);
    the jobs after it run, and are stored, in a new transaction."""
    db = _db(tmp_path / "t.db")
    group = _group(db)

    def lose() -> None:
        conn = group.writing()
        assert conn is not None
        conn.execute("ROLLBACK")  # what the engine does on SQLITE_IOERR / SQLITE_FULL
        raise StorageError("hub database read failed: disk I/O error")

    def lose_then_write() -> object:
        conn = group.writing()
        assert conn is not None
        conn.execute("ROLLBACK")
        with db.tx() as tx:
            tx.execute("INSERT INTO t VALUES (50)")
        return 50

    try:
        first = group.batch([_job(db, [1]), lose, _job(db, [3])])
        second = group.batch([_job(db, [2]), lose_then_write, _job(db, [4])])
    finally:
        db.close()
    assert [type(e) for _, e in first] == [StorageError, StorageError, type(None)]
    assert first[2] == ([3], None)
    assert [type(e) for _, e in second] == [StorageError, StorageError, type(None)]
    assert second[2] == ([4], None)
    assert _rows(tmp_path / "t.db") == {3, 4}


def test_a_group_handed_on_to_the_committer_stands_or_falls_with_its_batch(
    tmp_path: Path,
) -> None:
    """A ``tx`` thread done while the committer waits hands it its open transaction: the
    batch's commit is that write's too, and a failed one (a deferred foreign key) fails
    the thread's write as well as the batch's jobs, none stored; the next batch commits."""
    path = tmp_path / "fk.db"
    group = _deferred_fk_group(path)
    inside, go = threading.Event(), threading.Event()
    answers: dict[str, object] = {}

    def writer() -> None:
        try:
            with group.tx() as conn:
                conn.execute("INSERT INTO parent VALUES (1)")
                inside.set()
                assert go.wait(10)
            answers["writer"] = "stored"
        except StorageError as exc:
            answers["writer"] = exc

    def orphan() -> object:
        with group.tx() as conn:
            conn.execute("INSERT INTO child VALUES (1, 7)")
        return "child"

    def committer() -> None:
        answers["batch"] = group.batch([orphan])

    threads = [threading.Thread(target=writer), threading.Thread(target=committer)]
    try:
        threads[0].start()
        assert inside.wait(10)
        threads[1].start()
        deadline = time.monotonic() + 10
        while group._queued < 1 and time.monotonic() < deadline:  # the committer waits
            time.sleep(0.001)
        go.set()
        for thread in threads:
            thread.join(10)
        assert not any(t.is_alive() for t in threads)
        again = group.batch([lambda: "empty"])
    finally:
        group.close()
    assert isinstance(answers["writer"], StorageError)
    assert "FOREIGN KEY" in str(answers["writer"])
    batch = answers["batch"]
    assert isinstance(batch, list)
    assert isinstance(batch[0][1], StorageError)
    assert again == [("empty", None)]
    assert group.commits == 1  # the empty batch's; the failed one committed nothing
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT COUNT(*) FROM parent").fetchone()[0] == 0
        assert check.execute("SELECT COUNT(*) FROM child").fetchone()[0] == 0
    check.close()


_KINDS = st.lists(
    st.tuples(
        st.sampled_from(["ok", "inside", "after", "dup", "lose", "lose-write", "stop"]),
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=10,
)


@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(kinds=_KINDS)
def test_no_job_answered_failed_for_a_lost_transaction_left_a_row(
    tmp_path_factory: object, kinds: list[tuple[str, int]]
) -> None:
    """Whatever the jobs of a batch do (refuse, collide, raise what a future cannot carry,
    end the transaction outside a savepoint, write again after that): each gets an
    answer; every job answered with a value has all its rows stored; a job that ended
    the transaction, or was failed with it, has none."""
    base = tmp_path_factory.mktemp("kinds")  # type: ignore[attr-defined]
    db = _db(base / "t.db")
    group = _group(db)
    with db.tx() as conn:
        conn.execute("INSERT INTO t VALUES (-1)")

    def job(index: int, kind: str, count: int) -> Callable[[], object]:
        values = [index * 10 + k for k in range(count)]

        def run() -> object:
            if kind == "stop":
                raise StopIteration(index)
            if kind.startswith("lose"):
                _job(db, values[:1])()
                conn = group.writing()
                assert conn is not None
                conn.execute("ROLLBACK")
                if kind == "lose-write":
                    _job(db, values[1:])()
                raise StorageError("hub database read failed: disk I/O error")
            if kind == "dup":
                return _job(db, [*values, -1])()
            return _job(db, values, "" if kind == "ok" else kind)()

        return run

    jobs = [job(i, kind, count) for i, (kind, count) in enumerate(kinds)]
    try:
        outcomes = group.batch(jobs)
        rows = _rows(base / "t.db")
    finally:
        db.close()
    assert len(outcomes) == len(jobs)
    lost = "rolled back under a write"
    for i, ((kind, count), (value, error)) in enumerate(zip(kinds, outcomes, strict=True)):
        values = {i * 10 + k for k in range(count)}
        if error is None:
            assert values <= rows, (kind, value)
        elif kind.startswith("lose") or lost in str(error):
            assert not values & rows, (kind, error)


def test_closing_while_a_group_is_handed_on_commits_it_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write done while another waits hands it the open transaction; a ``close`` that
    takes the connection first (the hub shutting down under a worker's write) must commit
    that group, not close the connection under it: the write that then runs would find
    the group without its transaction and commit alone, answered as failed."""
    monkeypatch.setattr(group_commit, "MAX_AGE_S", 60.0)  # handed on, however slow the run
    db = _db(tmp_path / "t.db")
    group = _group(db)
    inside, go = threading.Event(), threading.Event()
    answers: dict[int, object] = {}

    def write(value: int, hold: bool = False) -> None:
        try:
            with db.tx() as conn:
                conn.execute("INSERT INTO t VALUES (?)", (value,))
                if hold:
                    inside.set()
                    assert go.wait(10)
            answers[value] = "stored"
        except StorageError as exc:
            answers[value] = exc

    first = threading.Thread(target=write, args=(1, True))
    first.start()
    assert inside.wait(10)
    closing = threading.Thread(target=group.close)
    closing.start()  # waits for the connection
    time.sleep(0.05)
    # a second write between counting itself as waiting and taking the mutex (which
    # thread the mutex wakes first is the kernel's choice; here, the close's)
    with group._guard:
        group._queued += 1
    go.set()  # the first write hands its group on, and waits for its commit
    closing.join(10)
    with group._guard:
        group._queued -= 1
    second = threading.Thread(target=write, args=(2,))
    second.start()
    for thread in (first, second):
        thread.join(10)
    assert not any(t.is_alive() for t in (first, closing, second))
    db.close()
    stored = {value for value, answer in answers.items() if answer == "stored"}
    assert _rows(tmp_path / "t.db") == stored
    assert stored == {1, 2}
