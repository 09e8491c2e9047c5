"""An SQLite hub directory written by the first hub opens and reads back whole.

``data/hub-v1`` was made by the first hub's code (``data/make_hub_v1.py``): two
teams whose changes interleave in one global cursor, two members each pushing
two snapshots, a pending join request, all at schema version 1 (no
``user_version``).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from sealmem.crypto import SUITE
from sealmem.hub.storage import TEAM_OWNER, StorageError
from sealmem.hub.storage.schema import SCHEMA_VERSION
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.hub.teams import Teams
from sealmem.protocol.manifest import peek
from sealmem.protocol.snapshot import chunk_id

V1 = Path(__file__).parent / "data" / "hub-v1"
TEAMS = ("acme-one", "acme-two")


@pytest.fixture
def old(tmp_path: Path) -> Path:
    data = tmp_path / "hub-data"
    shutil.copytree(V1, data)
    return data


def _old_rows(data: Path) -> dict[str, object]:
    with sqlite3.connect(data / "hub.db") as conn:
        out = {
            "changes": conn.execute(
                "SELECT team, cursor, kind, project, writer, seq FROM changes ORDER BY cursor"
            ).fetchall(),
            # what the team holds (the old usage table also counted replaced keyrings)
            "usage": dict(
                conn.execute(
                    "SELECT team, SUM(n) FROM ("
                    " SELECT team, LENGTH(data) AS n FROM rosters"
                    " UNION ALL SELECT team, LENGTH(data) FROM keyrings"
                    " UNION ALL SELECT team, LENGTH(data) FROM requests"
                    " UNION ALL SELECT team, LENGTH(data) FROM manifests"
                    " UNION ALL SELECT team, size FROM chunks) GROUP BY team"
                ).fetchall()
            ),
            "rosters": conn.execute("SELECT COUNT(*) FROM rosters").fetchone()[0],
            "manifests": conn.execute("SELECT COUNT(*) FROM manifests").fetchone()[0],
        }
    conn.close()
    return out


def test_the_fixture_is_a_first_hub_directory() -> None:
    with sqlite3.connect(V1 / "hub.db") as conn:
        assert conn.execute("PRAGMA user_version").fetchone() == (0,)
        columns = {r[1] for r in conn.execute("PRAGMA table_info(changes)")}
    conn.close()
    assert "team" in columns


def test_a_first_hub_directory_is_upgraded_and_reads_back(old: Path) -> None:
    before = _old_rows(old)
    store = SQLiteStorage(old)
    try:
        with sqlite3.connect(old / "hub.db") as conn:
            assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        conn.close()
        assert store.team_count() == 2
        teams = Teams(store)
        for team in TEAMS:
            state = teams.state(team)  # every stored roster and keyring verifies
            assert state.roster is not None
            assert state.roster.version == 2
            # the team's changes keep their cursors, in order
            mine = [c for c in before["changes"] if c[0] == team]  # type: ignore[union-attr]
            assert [
                (c.cursor, c.kind, c.project, c.writer, c.seq) for c in store.changes(team, 0)
            ] == [tuple(row[1:]) for row in mine]
            assert store.cursor(team) == mine[-1][1]
            assert store.usage(team) == before["usage"][team]  # type: ignore[index]
            for keyring in store.keyrings(team):
                assert keyring.roster_version >= 1
            projects = {c.project for c in store.changes(team, 0) if c.kind == "manifest"}
            writers: set[str] = set()
            for project in sorted(p for p in projects if p is not None):
                for writer, kept in store.manifests(team, project).items():
                    writers.add(writer)
                    assert len(kept) == 2
                    for data in kept:
                        for c in peek(data).chunks:
                            blob = store.chunk(team, project, writer, c.id)
                            assert blob is not None
                            assert chunk_id(SUITE, blob) == c.id
            assert len(writers) == 2  # two members each pushing
            assert sum(store.member_usage(team, w) for w in writers) + store.member_usage(
                team, TEAM_OWNER
            ) == store.usage(team)
        # every stored chunk is named by a kept manifest: none expires
        assert store.expire_unreferenced(2**62) == 0
        assert len(store.requests("acme-one")) == 1
        # the next change of a team goes on from its own newest cursor
        one = store.cursor("acme-one")
        with store.write("acme-one") as tx:
            tx.drop_writer("z" * 26, {})
            generation = tx.generation
        assert generation == 1
    finally:
        store.close()
    again = SQLiteStorage(old)  # a second open finds the current schema: nothing to do
    try:
        assert again.cursor("acme-one") == one
        assert again.team_count() == 2
    finally:
        again.close()


def test_a_database_from_a_newer_hub_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "hub-data"
    data.mkdir()
    with sqlite3.connect(data / "hub.db") as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StorageError, match="newer than this hub"):
        SQLiteStorage(data)
    SQLiteStorage(tmp_path / "fresh").close()  # and the lock was released on the way out


def test_a_first_hub_directory_from_before_join_addresses_is_upgraded(old: Path) -> None:
    # the first hub's earliest builds kept no address beside a join request
    with sqlite3.connect(old / "hub.db") as conn:
        conn.executescript(
            "CREATE TABLE bare (team TEXT NOT NULL, kid TEXT NOT NULL, data BLOB NOT NULL, "
            "stored_at INTEGER NOT NULL, PRIMARY KEY (team, kid));"
            "INSERT INTO bare SELECT team, kid, data, stored_at FROM requests;"
            "DROP TABLE requests; ALTER TABLE bare RENAME TO requests;"
        )
    conn.close()
    store = SQLiteStorage(old)
    try:
        [pending] = store.requests("acme-one")
        admission = store.offer_request(
            "acme-one", "z" * 26, b"{}", "192.0.2.7", pending.posted_at + 1,
            live_after_ms=0, max_pending=16, max_per_address=1,
        )  # fmt: skip
        assert admission.stored
    finally:
        store.close()


def _layout(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's and index's columns (name, type, not null, default, key position);
    SQLite's own tables aside (a first hub's ``sqlite_sequence`` stays)."""
    with sqlite3.connect(db) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        out = {n: conn.execute(f"PRAGMA table_xinfo({n})").fetchall() for n in names}
        out.update(
            {f"index {n}": conn.execute(f"PRAGMA index_xinfo({n})").fetchall() for n in names}
        )
    conn.close()
    return out


def test_a_fresh_and_an_upgraded_database_have_one_layout(old: Path, tmp_path: Path) -> None:
    v2 = tmp_path / "hub-v2"
    shutil.copytree(V1.parent / "hub-v2", v2)
    for data in (old, v2, tmp_path / "fresh"):
        SQLiteStorage(data).close()
    fresh = _layout(tmp_path / "fresh" / "hub.db")
    assert _layout(old / "hub.db") == fresh
    assert _layout(v2 / "hub.db") == fresh
    # the keyrings columns of every version 2 and 3 hub already written (a version 2
    # hub is upgraded by dropping its nonce table only): one version, one layout
    keyrings = [
        (name, kind, notnull, default) for _, name, kind, notnull, default, *_ in fresh["keyrings"]
    ]
    assert keyrings == [
        ("team", "TEXT", 1, None),
        ("project", "TEXT", 1, None),
        ("epoch", "INTEGER", 1, None),
        ("data", "BLOB", 1, None),
        ("stored_at", "INTEGER", 1, None),
        ("roster_version", "INTEGER", 1, "0"),
    ]
