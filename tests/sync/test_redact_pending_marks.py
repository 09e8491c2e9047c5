"""The redaction before a first push runs the rules once per version, never again.

``redaction.redact_pending`` redacts our versions not pushed yet (an older sealmem may have
stored a secret that newer rules catch).  A version whose text this store's rules
already redacted (``redaction_marks``, schema version 9: an import, a pull, this
function before) is skipped; what it finds clean or stores cleaned it marks.  The rules
themselves run for real; the spy only counts the calls.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.writer import write_version
from sealmem.client.sync import push, redaction
from sealmem.protocol.hlc import ZERO, Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.sync.conftest import PROJECT, World

NOW = 1_800_000_000_000
ME = "alice"


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = redaction.redact_version

    def spy(record: Record) -> tuple[Record, dict[str, int]]:
        calls.append(record.id)
        return real(record)

    monkeypatch.setattr(redaction, "redact_version", spy)
    return calls


def _pending(store: MemoryStore) -> int:
    with transaction(store.connection):
        return redaction.redact_pending(store.connection, ME, "proj", ZERO, NOW)


def _record(i: int, content: str) -> Record:
    return Record(
        id=new_memory_id(NOW - 10_000 + i, i.to_bytes(10, "big")), project="proj",
        kind="note", content=content, keywords=("k",), importance=0.5, author=ME, editor=ME,
        created_at=NOW - 10_000, hlc=Hlc(NOW - 10_000, i),
    )  # fmt: skip


def test_remembered_versions_are_not_redacted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``remember`` and ``share`` run the rules over the whole text (keywords read
    together) and mark what they store: the check before the first push skips it."""
    store = MemoryStore.open(tmp_path / "store.db", author=ME, clock=lambda: NOW)
    for i in range(12):
        store.remember(f"note {i} about the release checklist", project="proj")
    private = store.remember("a private note, shared later", project="proj", private=True)
    calls = _counting(monkeypatch)
    assert _pending(store) == 0
    assert calls == []
    store.share(private.memory.id)
    assert _pending(store) == 0
    assert calls == []
    store.close()


def test_unmarked_own_versions_are_redacted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Own versions a store holds without a mark (written by an older sealmem, or
    under other rules) are redacted by the first pass and marked: not again."""
    store = MemoryStore.open(tmp_path / "store.db", author=ME, clock=lambda: NOW)
    for i in range(12):
        store.remember(f"note {i} about the release checklist", project="proj")
    store.connection.execute("DELETE FROM redaction_marks")
    calls = _counting(monkeypatch)
    assert _pending(store) == 0
    assert len(calls) == 12
    assert _pending(store) == 0
    assert len(calls) == 12  # marked: not redacted again
    store.close()


def test_imported_versions_are_not_redacted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore.open(tmp_path / "store.db", author=ME, clock=lambda: NOW)
    entries = [
        {"record": _record(i, f"imported note {i}").to_wire(), "provenance": {"transport": "local"}}
        for i in range(20)
    ]
    doc = {"format": "sealmem-export", "version": 1, "memories": entries}
    store.import_stream(io.StringIO(json.dumps(doc)), name="export.json")
    calls = _counting(monkeypatch)
    assert _pending(store) == 0
    assert calls == []  # the import ran the rules and marked what it stored
    store.close()


def test_a_secret_an_older_sealmem_stored_is_still_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemoryStore.open(tmp_path / "store.db", author=ME, clock=lambda: NOW)
    leaked = _record(1, "the deploy password=hunter2hunter2 for staging")
    with transaction(store.connection):  # stored without the rules, as an older sealmem might
        write_version(
            store.connection, leaked, provenance=Provenance.local(), local_importance=0.5,
            seen_count=1, updated_at=NOW,
        )  # fmt: skip
    calls = _counting(monkeypatch)
    assert _pending(store) == 1
    stored = store.get(leaked.id).record
    assert "hunter2" not in stored.content
    assert _pending(store) == 0  # the cleaned version is marked
    assert len(calls) == 1
    store.close()


@pytest.mark.slow
def test_a_sync_with_nothing_new_opens_no_transaction_for_it(world: World) -> None:
    """Once every unpushed version is marked, the check before a push only reads (a write
    transaction is a commit, an fsync and a journal write at every sync)."""
    alice = world.nodes["alice"]
    for i in range(5):
        alice.remember(f"alice's note {i}")
    alice.sync()
    conn = alice.store.connection
    written = alice.remember("written after the push")  # marked by remember itself
    assert not redaction.needs_redaction(conn, alice.key.kid, PROJECT, ZERO)
    conn.execute("DELETE FROM redaction_marks WHERE id = ?", (written.id,))  # as before

    def traced() -> list[str]:
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        try:
            push.redact_pending(alice.t, PROJECT, alice.clock())
        finally:
            conn.set_trace_callback(None)
        return statements

    assert "BEGIN IMMEDIATE" in traced()  # the new version: redacted, then marked
    assert "BEGIN IMMEDIATE" not in traced()
    assert not redaction.needs_redaction(conn, alice.key.kid, PROJECT, ZERO)
