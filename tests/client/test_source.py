"""Who wrote a memory's text (its record's ``source``) in the local store.

A store of the schema before the field keeps every version exactly as it was (no
``source`` is added to a version, so teammates still hold the same bytes) and reads
who wrote it from its origin: a hook's capture waiting for review stays in the queue.
Every writer states its ``source``; a value outside the closed set is refused.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sealmem.client.hosts.review import waiting
from sealmem.client.recall.api import MemoryStore
from sealmem.client.store.connection import connect
from sealmem.client.store.schema import MIGRATIONS
from sealmem.protocol.errors import InputError
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id

NOW = 1_800_000_000_000
AUTHOR = "a" * 26


def _old_row(conn: sqlite3.Connection, n: int, origin: str, visibility: str) -> str:
    mid = new_memory_id(NOW + n, bytes([n]) * 10)
    conn.execute(
        "INSERT INTO memories (id, project, kind, content, importance, local_importance, "
        "author, editor, created_at, hlc_wall, hlc_counter, origin, visibility, updated_at) "
        "VALUES (?, 'webapp', 'note', ?, 0.5, 0.5, ?, ?, ?, ?, 0, ?, ?, ?)",
        (mid, f"memory number {n} of the old store", AUTHOR, AUTHOR, NOW, NOW + n, origin,
         visibility, NOW),
    )  # fmt: skip
    return mid


def test_a_store_of_before_the_field_reads_who_wrote_from_the_origin(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    conn = connect(path, now_ms=NOW, migrations=MIGRATIONS[:1], journaled=False)
    with conn:
        typed = _old_row(conn, 1, "cli:s1", "team")
        agent = _old_row(conn, 2, "mcp:3f2a9c01b7de", "team")
        capture = _old_row(conn, 3, "claude-code:7c1e", "private")
        kept = _old_row(conn, 4, "ui", "private")
    conn.close()

    with MemoryStore.open(path, author=AUTHOR, clock=lambda: NOW) as store:
        sources = {mid: store.get(mid).source for mid in (typed, agent, capture, kept)}
        assert sources == {typed: "person", agent: "agent", capture: "hook", kept: "person"}
        assert [m.id for m in waiting(store)] == [capture]  # still waiting for review
        assert all(store.get(mid).record.source is None for mid in sources)
        assert "source" not in store.get(agent).record.to_wire()  # the bytes teammates hold
        shared = store.share(capture)
        assert (shared.record.source, shared.source, shared.record.visibility) == (
            None,
            "hook",
            "team",
        )


def test_every_new_memory_states_its_source_and_later_versions_keep_it(
    tmp_path: Path,
) -> None:
    with MemoryStore.open(tmp_path / "store.db", author=AUTHOR, clock=lambda: NOW) as store:
        typed = store.remember("Releases are tagged from main only", project="webapp")
        assert typed.memory.record.source == "person"
        agent = store.remember(
            "The CI cache is keyed by the lock file", project="webapp", source="agent",
            private=True,
        )  # fmt: skip
        assert store.share(agent.memory.id).record.source == "agent"
        assert store.set_importance(agent.memory.id, 0.9).record.source == "agent"
        assert store.forget(agent.memory.id, reason="obsolete").record.source == "agent"
        with pytest.raises(InputError, match="source 'robot' is not one of person, agent"):
            store.remember("A robot wrote this", project="webapp", source="robot")  # type: ignore[arg-type]
        assert [m.content for m in store.recent(project="webapp")] == [typed.memory.content]


def test_a_record_states_its_source_or_none() -> None:
    record = Record(
        id=new_memory_id(NOW, bytes(10)), project="webapp", kind="note", content="x",
        keywords=(), importance=0.5, author=AUTHOR, editor=AUTHOR, created_at=NOW,
        hlc=Hlc(NOW, 0),
    )  # fmt: skip
    assert "source" not in record.to_wire()
    assert Record.from_wire(record.to_wire()) == record
    stated = record.evolve(source="hook")
    assert stated.to_wire()["source"] == "hook"
    assert Record.from_wire(stated.to_wire()) == stated
