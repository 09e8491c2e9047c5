"""The SQLite hub keeps its nonces in a file of their own (``hub-nonces.db``).

A request's nonce insert never waits for a team's write transaction (which
holds SQLite's writer lock across its durable commit); a replay is refused
after a restart and after the upgrade of a version 2 directory, whose nonce
table is handed over to the new file and dropped.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from sealmem.hub.storage import StorageError
from sealmem.hub.storage import nonces as nonce_module
from sealmem.hub.storage.nonces import CHECKPOINT_EVERY, PURGE_CHUNK, NonceFile
from sealmem.hub.storage.schema import NONCE_SCHEMA_VERSION, SCHEMA_VERSION
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.protocol import hubapi

from .conftest import PROJECT, TEAM, hub_config, now_ms, signed
from .restartable import Hub, make_hub_fixture  # noqa: F401 - the make_hub fixture

V2 = Path(__file__).parent / "data" / "hub-v2"
FAR = 2**62
KID = "a" * 26


def _tables(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    conn.close()
    return {str(r[0]) for r in rows}


def test_a_nonce_is_recorded_while_a_team_write_holds_the_database(tmp_path: Path) -> None:
    store = SQLiteStorage(tmp_path / "hub")
    inside, release = threading.Event(), threading.Event()

    def push() -> None:  # a team write that takes its time (as a push's fsync does)
        with store.write(TEAM):
            inside.set()
            release.wait(30)

    writer = threading.Thread(target=push)
    writer.start()
    try:
        assert inside.wait(10)
        answers: list[bool] = []
        reader = threading.Thread(
            target=lambda: answers.append(store.remember_nonce(KID, "n1", FAR, 1))
        )
        reader.start()
        reader.join(5)
        finished = not reader.is_alive()
    finally:
        release.set()
        writer.join(10)
        reader.join(10)
        store.close()
    assert finished, "the nonce insert waited for the team's write transaction"
    assert answers == [True]


def test_the_nonces_live_in_their_own_file(tmp_path: Path) -> None:
    data = tmp_path / "hub"
    store = SQLiteStorage(data)
    try:
        assert store.remember_nonce(KID, "n1", FAR, 1)
    finally:
        store.close()
    assert "nonces" not in _tables(data / "hub.db")
    assert "nonces" in _tables(data / "hub-nonces.db")
    with sqlite3.connect(data / "hub-nonces.db") as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (NONCE_SCHEMA_VERSION,)
        assert conn.execute("SELECT kid, nonce FROM nonces").fetchall() == [(KID, "n1")]
    conn.close()


def test_a_replayed_request_is_refused_after_a_restart(tmp_path: Path, make_hub: type[Hub]) -> None:
    hub = make_hub(hub_config(tmp_path / "hub"))
    world = hub.world()
    alice = world.nodes["alice"].key
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/seqs"
    headers = signed(alice, "GET", path)
    assert hub.c.get(path, headers=headers).status_code == 200
    hub.stop()
    hub.start()
    again = hub.c.get(path, headers=headers)
    assert again.status_code == 401
    assert again.json()["error"] == hubapi.REPLAYED
    fresh = hub.c.get(path, headers=signed(alice, "GET", path, now=now_ms()))
    assert fresh.status_code == 200


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    data = tmp_path / "hub-data"
    shutil.copytree(V2, data)
    return data


def test_the_fixture_is_a_version_2_directory() -> None:
    with sqlite3.connect(V2 / "hub.db") as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)
        assert conn.execute("SELECT COUNT(*) FROM nonces").fetchone()[0] > 0
    conn.close()


def test_a_version_2_directory_hands_its_live_nonces_over(v2: Path) -> None:
    with sqlite3.connect(v2 / "hub.db") as conn:
        seen = conn.execute("SELECT kid, nonce FROM nonces ORDER BY kid, nonce").fetchall()
        conn.execute("UPDATE nonces SET expires_ms = ?", (FAR,))  # still inside the window
    conn.close()
    store = SQLiteStorage(v2)
    try:
        for kid, nonce in seen:  # each one a replay, though recorded before the upgrade
            assert not store.remember_nonce(kid, nonce, FAR, now_ms())
        assert store.remember_nonce(seen[0][0], "a-nonce-never-seen", FAR, now_ms())
        assert store.team_count() == 2
        assert len(store.requests("acme-one")) == 1
    finally:
        store.close()
    assert "nonces" not in _tables(v2 / "hub.db")
    with sqlite3.connect(v2 / "hub.db") as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()
    SQLiteStorage(v2).close()  # a second open has nothing left to upgrade


def test_expired_nonces_of_a_version_2_directory_are_forgotten(v2: Path) -> None:
    with sqlite3.connect(v2 / "hub.db") as conn:
        kid, nonce = conn.execute("SELECT kid, nonce FROM nonces LIMIT 1").fetchone()
        conn.execute("UPDATE nonces SET expires_ms = 1")
    conn.close()
    store = SQLiteStorage(v2)
    try:
        assert store.remember_nonce(kid, nonce, FAR, now_ms())  # long out of the window
    finally:
        store.close()


def test_a_nonce_file_from_a_newer_hub_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "hub"
    data.mkdir()
    with sqlite3.connect(data / "hub-nonces.db") as conn:
        conn.execute(f"PRAGMA user_version = {NONCE_SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StorageError, match="nonce file is at schema version"):
        SQLiteStorage(data)
    SQLiteStorage(tmp_path / "fresh").close()
    (data / "hub-nonces.db").unlink()
    SQLiteStorage(data).close()  # and hub.lock was released on the way out


@pytest.mark.slow
def test_the_nonce_wal_is_checkpointed_off_the_requests_path(tmp_path: Path) -> None:
    data = tmp_path / "hub"
    store = SQLiteStorage(data)
    wal = data / "hub-nonces.db-wal"
    sizes = []
    try:
        for round_ in range(8):
            for i in range(CHECKPOINT_EVERY):
                assert store.remember_nonce(KID, f"n{round_}-{i}", FAR, 1)
            time.sleep(0.3)  # the checkpoint thread's turn
            sizes.append(wal.stat().st_size)
    finally:
        store.close()
    # the WAL is reused once checkpointed; without checkpoints it grows by a round each round
    assert sizes[-1] < 6 * sizes[0], sizes  # 9x without the checkpoints


def test_expired_nonces_are_purged_off_the_requests_path(tmp_path: Path) -> None:
    """The insert that crosses the purge mark deletes nothing itself (it may run on the
    event loop); the checkpoint thread deletes the expired rows, a chunk at a time."""
    nonces = NonceFile(tmp_path / "hub-nonces.db")
    try:
        expired = 3 * PURGE_CHUNK + 7
        for i in range(expired):
            assert nonces.remember(KID, f"old-{i}", 10, 0)
        nonces._next_purge = 0  # the mark: the next insert crosses it
        asked: list[str] = []
        nonces._db.conn().set_trace_callback(asked.append)  # this thread's statements
        assert nonces.remember(KID, "new", FAR, 11 + nonce_module.PURGE_SLACK_MS)
        nonces._db.conn().set_trace_callback(None)
        assert not [sql for sql in asked if "DELETE" in sql.upper()], asked
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            left = nonces._db.read("SELECT count(*) FROM nonces")[0][0]
            if left == 1:
                break
            time.sleep(0.05)
        assert left == 1  # only the live one
        assert not nonces.remember(
            KID, "new", FAR, 12 + nonce_module.PURGE_SLACK_MS
        )  # still refused as a replay
    finally:
        nonces.close()


def test_close_does_not_wait_for_a_long_purge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A purge gives way to close between two chunks: close never leaves the thread
    running on a database it has closed, nor waits for the whole backlog."""
    monkeypatch.setattr(nonce_module, "PURGE_CHUNK", 1)
    path = tmp_path / "hub-nonces.db"
    nonces = NonceFile(path)
    backlog = 100_000
    try:
        nonces.adopt((KID, f"old-{i}", 10) for i in range(backlog))
        assert nonces.remember(KID, "new", FAR, 11 + nonce_module.PURGE_SLACK_MS)  # the mark
        deadline = time.monotonic() + 10
        while nonces._db.read("SELECT count(*) FROM nonces")[0][0] > backlog:
            assert time.monotonic() < deadline  # the purge has started
            time.sleep(0.01)
    finally:
        nonces.close()
    assert not nonces._checkpointer.is_alive()
    with sqlite3.connect(path) as conn:
        left = conn.execute("SELECT count(*) FROM nonces").fetchone()[0]
    conn.close()
    assert left > backlog // 2  # stopped at close, not run to the end


def test_a_request_whose_clock_lags_the_purge_mark_is_still_refused_as_a_replay(
    tmp_path: Path,
) -> None:
    """Requests read the clock on their own threads: one may record its nonce after
    another, later reading crossed the purge mark; a row expired at the mark but live at
    the lagging request's time stays until it is expired for every request in flight."""
    nonces = NonceFile(tmp_path / "hub-nonces.db")
    try:
        assert nonces.remember(KID, "seen", 100, 0)
        nonces._next_purge = 0  # the mark: the next insert crosses it
        assert nonces.remember(KID, "later", FAR, 100)  # "seen" expired at this reading
        deadline = time.monotonic() + 10
        while nonces._db.read("SELECT count(*) FROM nonces WHERE nonce = 'later'") != [(1,)]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.3)  # the purge thread's turn
        assert not nonces.remember(KID, "seen", 100, 99)  # still inside its window at 99
    finally:
        nonces.close()
