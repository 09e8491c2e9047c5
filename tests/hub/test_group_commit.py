"""Group commit on the SQLite hub: writes arriving together share one durable commit.

Each write still returns only once its work is committed (seen by a connection
of its own right after), a write that fails leaves the others of its group, a
transaction the engine ended under one write fails every write of its group
(none stored, none acknowledged), and rosters/keyrings (``write``) commit alone.
The WAL file is read to count commits: one commit record per transaction.
"""

from __future__ import annotations

import signal
import sqlite3
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import SUITE, MemberKey
from sealmem.hub.routes import BATCHED_CHUNK_BYTES
from sealmem.hub.server import free_port
from sealmem.hub.storage import StorageError
from sealmem.hub.storage import group as group_commit
from sealmem.hub.storage.blobs import BlobKey
from sealmem.hub.storage.dbfile import SQLiteDb
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.protocol.snapshot import chunk_id

from .conftest import PROJECT, TEAM, TOKEN, HubWorld, signed, start_hub_process

WRITER = "b" * 26
QUEUED = 6


def wal_commits(db: Path) -> int:
    """Commit records in ``db``'s WAL (frames of the current WAL generation whose
    "database size after commit" field is set)."""
    wal = db.with_name(db.name + "-wal")
    data = wal.read_bytes() if wal.exists() else b""
    if len(data) < 32:
        return 0
    page = struct.unpack(">I", data[8:12])[0]
    salts = data[16:24]
    commits, at = 0, 32
    while at + 24 + page <= len(data):
        header = data[at : at + 24]
        if header[8:16] != salts:
            break
        if struct.unpack(">I", header[4:8])[0]:
            commits += 1
        at += 24 + page
    return commits


def queued_behind(
    hold: Callable[[threading.Event, threading.Event], object],
    writes: list[Callable[[], object]],
) -> tuple[object, list[object]]:
    """Run ``hold`` (a write that signals ``inside`` and waits for ``release``) and,
    while it holds the write side, start ``writes`` in threads of their own; release
    it once they all wait.  Return what ``hold`` and each write returned or raised."""
    inside, release = threading.Event(), threading.Event()
    out: list[object] = [None] * (len(writes) + 1)

    def run(i: int, fn: Callable[[], object]) -> None:
        try:
            out[i] = fn()
        except Exception as exc:
            out[i] = exc

    holder = threading.Thread(target=run, args=(0, lambda: hold(inside, release)))
    holder.start()
    assert inside.wait(10)
    threads = [threading.Thread(target=run, args=(i + 1, w)) for i, w in enumerate(writes)]
    for t in threads:
        t.start()
    time.sleep(0.4)  # every write is waiting for the write side now
    release.set()
    holder.join(20)
    for t in threads:
        t.join(20)
    assert not holder.is_alive()
    assert not any(t.is_alive() for t in threads)
    return out[0], out[1:]


@pytest.fixture(autouse=True)
def _patient_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """The holder keeps its group open 0.4 s: longer than a group's age bound."""
    monkeypatch.setattr(group_commit, "MAX_AGE_S", 30.0)


@pytest.mark.slow
def test_chunk_rows_arriving_together_share_one_commit(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "hub")
    db = tmp_path / "hub" / "hub.db"
    keys = [BlobKey(TEAM, PROJECT, WRITER, f"{i:064x}") for i in range(QUEUED)]
    try:
        before = wal_commits(db)

        def hold(inside: threading.Event, release: threading.Event) -> None:
            with store.write(TEAM):  # a roster's write: commits alone
                inside.set()
                release.wait(20)

        def add(key: BlobKey) -> Callable[[], object]:
            def write() -> object:
                stored = store.chunk_row_add(key, 100, 1)
                # acknowledged means committed: a connection of its own sees the row
                with sqlite3.connect(db) as other:
                    seen = other.execute(
                        "SELECT COUNT(*) FROM chunks WHERE id = ?", (key.chunk_id,)
                    ).fetchone()[0]
                other.close()
                return stored, seen

            return write

        _, results = queued_behind(hold, [add(k) for k in keys])
        after = wal_commits(db)
    finally:
        store.close()
    assert results == [(True, 1)] * QUEUED
    # the holder's commit, then one for the six that waited together (was one each)
    assert after - before <= 2, f"{after - before} commits for {QUEUED + 1} writes"


def _db(tmp_path: Path) -> SQLiteDb:
    db = SQLiteDb(tmp_path / "t.db", None, grouped=True)
    db.set_up(lambda conn: conn.execute("CREATE TABLE t (a INTEGER PRIMARY KEY)"))
    return db


def _rows(path: Path) -> set[int]:
    with sqlite3.connect(path) as conn:
        rows = {int(r[0]) for r in conn.execute("SELECT a FROM t")}
    conn.close()
    return rows


def _holder(db: SQLiteDb, value: int) -> Callable[[threading.Event, threading.Event], object]:
    def hold(inside: threading.Event, release: threading.Event) -> int:
        with db.tx() as conn:
            conn.execute("INSERT INTO t VALUES (?)", (value,))
            inside.set()
            release.wait(20)
        return value

    return hold


def _insert(
    db: SQLiteDb, value: int, then: Callable[[sqlite3.Connection], None] | None = None
) -> Callable[[], object]:
    def write() -> object:
        with db.tx() as conn:
            conn.execute("INSERT INTO t VALUES (?)", (value,))
            if then is not None:
                then(conn)
        return value

    return write


@pytest.mark.slow
def test_a_failing_write_leaves_the_others_of_its_group(tmp_path: Path) -> None:
    db = _db(tmp_path)

    def refuse(conn: sqlite3.Connection) -> None:
        raise ValueError("refused after its insert")

    try:
        writes = [_insert(db, i) for i in range(1, 4)]
        writes.insert(1, _insert(db, 99, refuse))
        held, results = queued_behind(_holder(db, 0), writes)
        group = db.group
        assert group is not None
        commits = group.commits
    finally:
        db.close()
    assert held == 0
    assert isinstance(results[1], ValueError)
    assert [results[0], *results[2:]] == [1, 2, 3]
    assert _rows(tmp_path / "t.db") == {0, 1, 2, 3}
    assert commits <= 2


@pytest.mark.slow
def test_a_transaction_ended_under_one_write_fails_its_whole_group(tmp_path: Path) -> None:
    """SQLite rolls the whole transaction back on some errors (a full disk, an I/O
    error): every write of that group is told, none is stored; the next one works."""
    db = _db(tmp_path)

    def lose_everything(conn: sqlite3.Connection) -> None:
        conn.execute("ROLLBACK")  # what the engine does on SQLITE_FULL
        raise sqlite3.OperationalError("database or disk is full")

    try:
        writes = [_insert(db, 1), _insert(db, 2, lose_everything), _insert(db, 3)]
        held, results = queued_behind(_holder(db, 0), writes)
        assert _insert(db, 4)() == 4
    finally:
        db.close()
    rows = _rows(tmp_path / "t.db")
    # the holder handed its open group on: it went down with the write that broke it
    assert isinstance(held, StorageError)
    assert 0 not in rows
    assert isinstance(results[1], StorageError)
    assert 2 not in rows
    for value, result in zip((1, 3), (results[0], results[2]), strict=True):
        # in the broken group (failed, not stored) or in one after it (stored)
        assert (result == value and value in rows) or (
            isinstance(result, StorageError) and value not in rows
        ), (value, result, rows)
    assert 4 in rows


@pytest.mark.slow
def test_a_solo_write_commits_the_group_before_it_and_then_alone(tmp_path: Path) -> None:
    db = _db(tmp_path)
    seen: list[set[int]] = []

    def solo() -> object:
        with db.tx(solo=True) as conn:
            conn.execute("INSERT INTO t VALUES (50)")
            seen.append(_rows(tmp_path / "t.db"))  # what is committed while it runs
        return 50

    try:
        held, results = queued_behind(_holder(db, 0), [_insert(db, 1), solo, _insert(db, 2)])
    finally:
        db.close()
    assert held == 0
    assert results == [1, 50, 2]
    assert 50 not in seen[0]
    assert _rows(tmp_path / "t.db") == {0, 1, 2, 50}


def test_reads_inside_a_write_see_its_group(tmp_path: Path) -> None:
    db = _db(tmp_path)
    try:
        with db.tx() as conn:
            conn.execute("INSERT INTO t VALUES (7)")
            assert db.read("SELECT a FROM t") == [(7,)]
        with pytest.raises(StorageError), db.tx() as conn:
            conn.execute("INSERT INTO t VALUES (7)")  # the primary key: refused
        assert db.read("SELECT a FROM t") == [(7,)]
    finally:
        db.close()


@pytest.mark.slow
@pytest.mark.parametrize("stop_with", [signal.SIGKILL, signal.SIGTERM], ids=["kill", "term"])
def test_every_acknowledged_put_survives_a_kill_or_a_stop(
    tmp_path: Path, stop_with: signal.Signals
) -> None:
    """Sixteen uploads at a time (so their rows share commits): small chunks through the
    committer, now and then a large one through a worker thread.  The hub is killed
    (SIGKILL) or stopped (SIGTERM: it exits cleanly and soon, every queued write answered
    or failed, none with a 500) while they run; after a restart every chunk it
    acknowledged is there."""
    data, port = tmp_path / "hub-data", free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_hub_process(data, port)
    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, url, lambda k: HubTransport(url, TEAM, k, operator_token=TOKEN))
    acked: dict[tuple[str, str], bytes] = {}
    statuses: set[int] = set()
    lock, stop = threading.Lock(), threading.Event()

    def upload(key: MemberKey, j: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            i = 0
            while not stop.is_set():
                body = f"chunk {i} of uploader {j} ".encode() * 8
                if j == 0 and i % 4 == 0:  # a large one now and then: a worker thread
                    body = body * (BATCHED_CHUNK_BYTES // len(body) + 1)
                cid = chunk_id(SUITE, body)
                path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{cid}"
                try:
                    r = client.put(path, headers=signed(key, "PUT", path, body), content=body)
                except httpx.HTTPError:
                    return  # the hub is gone
                with lock:
                    statuses.add(r.status_code)
                    if r.status_code == 201:
                        acked[(key.kid, cid)] = body
                i += 1

    try:
        w.create()
        members = w.join("alice", "bob")
        threads = [threading.Thread(target=upload, args=(members[j % 2].key, j)) for j in range(16)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(acked) < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(stop_with)  # uploads in flight: some writes of a batch pending
        code = proc.wait(timeout=30)  # SIGTERM: uvicorn's graceful 3 s, the lifespan's end
        stop.set()
        for t in threads:
            t.join(30)
        assert code == -stop_with or (stop_with == signal.SIGTERM and code == 0)
        assert len(acked) >= 200
        assert 500 not in statuses, statuses
        proc = start_hub_process(data, port)
        keys = {m.key.kid: m.key for m in members}
        with httpx.Client(base_url=url, timeout=10) as client:
            for (kid, cid), body in sorted(acked.items()):
                path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{kid}/{cid}"
                r = client.get(path, headers=signed(keys[kid], "GET", path))
                assert r.status_code == 200, (cid, r.status_code, r.text)
                assert r.content == body
    finally:
        stop.set()
        w.close()
        proc.kill()
        proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bound", "value", "least"),
    [("MAX_AGE_S", 0.05, 2), ("MAX_WRITES", 2, 4)],
    ids=["age", "size"],
)
def test_a_group_commits_at_its_bound_even_with_writes_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: str, value: float, least: int
) -> None:
    """A steady stream never keeps the first writes of a group waiting: past its age
    (the holder keeps it 0.4 s) or its size, a group commits; the rest start another."""
    monkeypatch.setattr(group_commit, bound, value)
    db = _db(tmp_path)
    try:
        held, results = queued_behind(_holder(db, 0), [_insert(db, i) for i in range(1, 7)])
        group = db.group
        assert group is not None
        commits, writes = group.commits, group.writes
    finally:
        db.close()
    assert held == 0
    assert results == [1, 2, 3, 4, 5, 6]
    assert writes == 7
    assert commits >= least
    assert _rows(tmp_path / "t.db") == set(range(7))
