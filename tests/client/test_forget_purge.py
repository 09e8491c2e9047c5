"""forget removes the text: of every version, from tables, indexes, exports and the files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store.connection import connect
from tests.support.traces import CONTENT, KEYWORD, LATER, MARKERS, traces

from .conftest import OpenStore


def two_versions(store: MemoryStore) -> str:
    """A memory with an older version in history (the content marker in both, the
    keyword markers one in each)."""
    first = store.remember(f"deploy token is {CONTENT} for staging", keywords=[KEYWORD]).memory
    again = store.remember(f"deploy token is {CONTENT} for staging", keywords=[LATER])
    assert again.merged
    assert store.history(first.id)  # a second version, the first in history
    return first.id


@pytest.fixture(params=["sqlite-default", "secure-delete-off-by-default"])
def any_build(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite builds differ: Debian's turns secure_delete on by default, python.org's and
    macOS's do not.  The second case gives every new connection the OFF default."""
    if request.param == "sqlite-default":
        return
    real = sqlite3.connect

    def connect_off(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real(*args, **kwargs)
        conn.execute("PRAGMA secure_delete = OFF")
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect_off)


@pytest.mark.usefixtures("any_build")
def test_forget_leaves_no_trace_in_the_store_files(open_store: OpenStore) -> None:
    store = open_store()
    store.remember("unrelated note about the build cache", keywords=["cache"])
    memory_id = two_versions(store)
    assert traces(store.path)  # the markers are there to be found before the forget
    tomb = store.forget(memory_id, reason="it held a deploy token")
    assert (tomb.deleted, tomb.content, tomb.record.keywords) == (True, "", ())
    assert tomb.record.delete_reason == "it held a deploy token"
    assert traces(store.path) == []  # store.db and store.db-wal, the store still open


def test_forget_purges_history_indexes_and_export(store: MemoryStore) -> None:
    memory_id = two_versions(store)
    before = store.get(memory_id)
    store.forget(memory_id, reason="leaked")
    assert store.history(memory_id) == []
    conn = store.connection
    assert (
        conn.execute("SELECT count(*) FROM history WHERE id = ?", (memory_id,)).fetchone()[0] == 0
    )
    for table in ("memories_fts", "history_fts"):
        for marker in MARKERS:
            hits = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (marker,)
            ).fetchone()[0]
            assert hits == 0, (table, marker)
    assert store.recall(CONTENT, include_history=True) == []
    assert store.recall(KEYWORD, include_history=True) == []
    document = json.dumps(store.export())
    assert [m for m in MARKERS if m in document] == []
    tomb = store.get(memory_id)  # the metadata stays
    kept = ("id", "kind", "project", "author", "created_at")
    assert [getattr(tomb.record, f) for f in kept] == [getattr(before.record, f) for f in kept]


def test_an_old_export_does_not_bring_the_text_back(
    store: MemoryStore, open_store: OpenStore, tmp_path: Path
) -> None:
    memory_id = two_versions(store)
    old_export = store.export()
    store.forget(memory_id, reason="leaked")
    store.import_(old_export)
    assert store.get(memory_id).deleted
    assert store.history(memory_id) == []
    assert traces(store.path) == []
    # and an export with the tombstone purges a store that still holds the text
    other = open_store(tmp_path / "other.db", author="bob")
    other.import_(old_export)
    assert traces(other.path)
    other.import_(store.export())
    assert other.get(memory_id).deleted
    assert other.history(memory_id) == []
    assert traces(other.path) == []


def test_connections_overwrite_what_they_delete(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.db")
    try:
        assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    finally:
        conn.close()
