"""A chunk opened again (another record in its bucket changed) costs what changed: the
versions the store already holds are neither redacted nor merged again, and the store ends
exactly as merging them all would leave it (``test_apply.py`` checks that against
``merge_many`` for any batches)."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.rows import read_hlc
from sealmem.client.sync import apply
from sealmem.client.sync.apply import apply_versions
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id

NOW = 1_800_000_000_000
PULLED = Provenance("folder", "alice", "alice", True, NOW, 1)


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
        conn: sqlite3.Connection, records: Iterable[Record]
    ) -> list[tuple[Record, dict[str, int]]]:
        records = list(records)
        redacted.extend(record.id for record in records)
        return real(conn, records)

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
