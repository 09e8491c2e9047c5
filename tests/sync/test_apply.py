"""The store's merge is the pure merge: pulled versions through a real SQLite store.

``apply_versions`` (what the sync engine runs for every chunk) must decide exactly
what :func:`sealmem.protocol.merge.merge_many` decides (the function the merge
laws in tests/protocol/test_merge.py are property-tested against): the same
winners, floors and clock, batch after batch, and nothing lost locally but the text
of forgotten memories.

A chunk opened again (another record in its bucket changed) costs what changed: the
versions the store already holds are neither redacted nor merged again.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sealmem.protocol.merge
from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.rows import read_hlc
from sealmem.client.sync import apply
from sealmem.client.sync.apply import apply_versions
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.merge import MergeResult, merge_many, version_key
from sealmem.protocol.record import Record, new_memory_id
from tests.support.versions import version_lists
from tests.sync.conftest import World

NOW = 1_800_000_000_000
PULLED = Provenance("folder", "alice", "alice", True, NOW, 1)


def _wire(records: Mapping[str, Record]) -> dict[str, Any]:
    return {rid: r.to_wire() for rid, r in records.items()}


def _stored(store: MemoryStore) -> tuple[dict[str, Any], dict[str, float], list[Any]]:
    conn = store.connection
    rows = conn.execute(
        "SELECT id, importance, local_importance FROM memories ORDER BY id"
    ).fetchall()
    winners = {str(r[0]): store.get(str(r[0])).record.to_wire() for r in rows}
    floors = {str(r[0]): float(r[2]) for r in rows if float(r[2]) > float(r[1])}
    history = [json.loads(r[0]) for r in conn.execute("SELECT record_json FROM history")]
    return winners, floors, history


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(version_lists, min_size=1, max_size=3))
def test_the_store_merges_exactly_like_merge_many(batches: list[list[Record]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore.open(Path(tmp) / "store.db", author="reader", clock=lambda: NOW)
        try:
            conn = store.connection
            winners: dict[str, Record] = {}
            floors: dict[str, float] = {}
            clock = read_hlc(conn)
            fed: list[Record] = []
            for batch in batches:
                with transaction(conn):
                    done = apply_versions(conn, batch, PULLED, NOW)
                model = merge_many(winners, batch, now_ms=NOW, clock=clock, floors=floors)
                winners, floors, clock = model.winners, model.floors, model.clock
                fed.extend(batch)
                stored, stored_floors, history = _stored(store)
                assert stored == _wire(winners)
                assert stored_floors == floors
                assert read_hlc(conn) == clock
                assert done.new + done.updated == len(model.changed)
            # nothing is lost locally but forgotten text: every version fed is a winner or
            # in history, unless a newer tombstone of its id by the same writer was fed (a
            # pulled tombstone erases only its own writer's text) ...
            kept = [*stored.values(), *history]
            for version in fed:
                forgotten = any(
                    t.deleted
                    and t.id == version.id
                    and t.editor == version.editor
                    and version_key(t) > version_key(version)
                    for t in fed
                )
                assert version.to_wire() in kept or (forgotten and not version.deleted)
            # ... and while a tombstone wins, no version of its id with content by the
            # tombstone's writer is kept
            for rid, winner in stored.items():
                if winner["deleted"]:
                    covered = [
                        h
                        for h in history
                        if h["id"] == rid and not h["deleted"] and h["editor"] == winner["editor"]
                    ]
                    assert covered == []
        finally:
            store.close()


def test_the_sync_engine_merges_through_merge_many(world: World, monkeypatch: Any) -> None:
    """A real pull calls the pure merge and writes what it returned (a call-through spy)."""
    assert apply.merge_many is sealmem.protocol.merge.merge_many
    seen: list[MergeResult] = []

    def spy(*args: Any, **kwargs: Any) -> MergeResult:
        result = merge_many(*args, **kwargs)
        seen.append(result)
        return result

    monkeypatch.setattr(apply, "merge_many", spy)
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember("the CI cache key includes the lockfile hash", importance=0.8)
    alice.sync()
    bob.sync()
    assert [r.changed for r in seen] == [(mem.id,)]
    assert bob.store.get(mem.id).record.to_wire() == seen[0].winners[mem.id].to_wire()
    assert read_hlc(bob.store.connection) == seen[0].clock
    assert seen[0].clock > Hlc(mem.record.hlc.wall, mem.record.hlc.counter)


def _records(n: int) -> list[Record]:
    return [
        Record(
            id=new_memory_id(1_700_000_000_000 + i, bytes([i]) * 10),
            project="proj",
            kind="note",
            content=f"alice's note {i} about the deploy",
            keywords=("deploy",),
            importance=0.5,
            author="alice",
            editor="alice",
            created_at=1_700_000_000_000,
            hlc=Hlc(1_700_000_000_000 + i, 0),
            supersedes=(),
            deleted=False,
            delete_reason=None,
            visibility="team",
        ).validate()
        for i in range(40)
    ]


def test_versions_already_held_are_not_redacted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore.open(tmp_path / "store.db", author="reader", clock=lambda: NOW)
    conn = store.connection
    redacted: list[str] = []
    real = apply.redact_versions

    def counting(
        conn: sqlite3.Connection, records: Iterable[Record], held: Mapping[str, Record]
    ) -> list[tuple[Record, dict[str, int]]]:
        records = list(records)
        redacted.extend(record.id for record in records)
        return real(conn, records, held)

    monkeypatch.setattr(apply, "redact_versions", counting)
    first = _records(40)
    with transaction(conn):
        assert apply_versions(conn, first, PULLED, NOW).new == 40
    assert len(redacted) == 40
    again = list(first)
    again[7] = dataclasses.replace(first[7], content="changed", hlc=Hlc(NOW - 10, 0))
    redacted.clear()
    clock = read_hlc(conn)
    with transaction(conn):
        result = apply_versions(conn, again, PULLED, NOW)
    assert redacted == [first[7].id]  # only the changed version
    assert (result.new, result.updated, result.unchanged) == (0, 1, 39)
    assert store.get(first[7].id).content == "changed"
    assert read_hlc(conn) > clock  # the clock still saw every version
    store.close()


def test_a_pull_over_a_row_whose_text_is_not_utf8_merges_the_batch(tmp_path: Path) -> None:
    """The batch's rows are read with SQLite's own UTF-8 decoding, which refuses bytes
    another tool wrote that are not UTF-8: they are then read again with U+FFFD, and the
    whole batch merges (the replaced version is kept in history as read)."""
    store = MemoryStore.open(tmp_path / "store.db", author="reader", clock=lambda: NOW)
    conn = store.connection
    first = _records(40)[:3]
    with transaction(conn):
        assert apply_versions(conn, first, PULLED, NOW).new == 3
    conn.execute(
        "UPDATE memories SET content = CAST(x'6361636865ff20726564697320fe' AS TEXT) WHERE id = ?",
        (first[0].id,),
    )
    newer = [dataclasses.replace(r, hlc=Hlc(r.hlc.wall + 10, 0)) for r in first]
    with transaction(conn):
        done = apply_versions(conn, [*newer, *_records(40)[3:5]], PULLED, NOW)
    assert (done.new, done.updated) == (2, 3)
    assert store.get(first[0].id).record.content == first[0].content
    [kept] = [
        json.loads(text)["content"]
        for (text,) in conn.execute("SELECT record_json FROM history WHERE id = ?", (first[0].id,))
    ]
    assert kept == "cache\ufffd redis \ufffd"
    store.close()
