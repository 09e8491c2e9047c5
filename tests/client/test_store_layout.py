"""Every field of a version and of its local state survives every path that reads a row.

The writer and its keepers read ``memories`` rows by position (the order of
:data:`~sealmem.client.store.rows.MEMORY_COLUMN_NAMES`), the readers by the row's own
column names.  A version whose every field holds a value no other field holds is
written, replaced, removed and restored, and read back through each path: a value read
from the wrong column shows as another field's value.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.client import MemoryStore
from sealmem.client.store import derived, rows
from sealmem.client.store.connection import transaction
from sealmem.client.store.export import export_document
from sealmem.client.store.memory import Memory, Provenance
from sealmem.client.store.writer import Batch, Write, load_rows, write, write_version
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id

NOW = 1_800_000_000_000
OLD_LINK = new_memory_id(NOW - 9_000, bytes([9]) * 10)
NEW_LINK = new_memory_id(NOW - 8_000, bytes([8]) * 10)
FIRST = Record(
    id=new_memory_id(NOW - 10_000, bytes([1]) * 10),
    project="alpha",
    kind="decision",
    content="the first text of the ledger 台帳",
    keywords=("kwone", "kwtwo"),
    importance=0.25,
    author="alice",
    editor="bob",
    created_at=NOW - 101,
    hlc=Hlc(NOW - 103, 5),
    supersedes=(OLD_LINK,),
    origin="mcp",
    visibility="team",
    source="agent",
).validate()
SECOND = FIRST.evolve(
    project="alpha",
    kind="warning",
    content="a second wording about the archive 書庫",
    keywords=("kwthree",),
    importance=0.625,
    editor="carol",
    hlc=Hlc(NOW - 53, 7),
    supersedes=(NEW_LINK,),
    origin="cli",
    visibility="private",
    source=None,
)
FIRST_FROM = Provenance("folder", "kid-sam", "Sam", True, NOW - 211, 223)
SECOND_FROM = Provenance("hub", "kid-ann", "Ann", False, NOW - 307, 311)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    opened = MemoryStore.open(tmp_path / "store.db", author="reader", clock=lambda: NOW)
    try:
        yield opened
    finally:
        opened.close()


def _write(conn: sqlite3.Connection, record: Record, came: Provenance, local: float, seen: int,
           updated: int) -> None:  # fmt: skip
    with transaction(conn):
        write_version(
            conn, record, provenance=came, local_importance=local, seen_count=seen,
            updated_at=updated, bucket_key=4099,
        )  # fmt: skip


def _columns(conn: sqlite3.Connection, record: Record, came: Provenance) -> dict[str, Any]:
    """What the ``memories`` columns of ``record`` arrived by ``came`` must hold."""
    return {
        "id": record.id,
        "project": record.project,
        "kind": record.kind,
        "content": record.content,
        "keywords": " ".join(record.keywords),
        "keywords_json": json.dumps(list(record.keywords)),
        "importance": record.importance,
        "author": record.author,
        "editor": record.editor,
        "created_at": record.created_at,
        "hlc_wall": record.hlc.wall,
        "hlc_counter": record.hlc.counter,
        "supersedes_json": json.dumps(list(record.supersedes)),
        "deleted": int(record.deleted),
        "delete_reason": record.delete_reason,
        "origin": record.origin,
        "visibility": record.visibility,
        "source": record.source,
        "grams": "台帳 帳"
        if record.content.endswith("台帳")
        else "書庫 庫"
        if record.content
        else None,
        "transport": came.transport,
        "signer": came.signer,
        "signer_name": came.signer_name,
        "verified": int(came.verified),
        "received_at": came.received_at,
        "snapshot_seq": came.snapshot_seq,
        "bucket_key": 4099,
        "norm_hash": rows.norm_hash(record.content),
    }


def _row(conn: sqlite3.Connection, memory_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return dict(zip(row.keys(), row, strict=True))


def _read_everywhere(store: MemoryStore, expected: Memory) -> None:
    conn = store.connection
    mid = expected.id
    positional = rows.load_row(conn, mid)
    assert positional is not None
    assert rows.memory_from_row(positional) == expected
    assert rows.record_from_row(load_rows(conn, [mid])[mid]) == expected.record
    by_table_order = conn.execute("SELECT * FROM memories WHERE id = ?", (mid,)).fetchone()
    assert rows.memory_from_row(by_table_order) == expected
    reversed_names = ", ".join(reversed(rows.MEMORY_COLUMN_NAMES))
    backwards = conn.execute(f"SELECT {reversed_names} FROM memories WHERE id = ?", (mid,))
    assert rows.memory_from_row(backwards.fetchone()) == expected
    assert store.get(mid) == expected
    (record_values,) = conn.execute(
        f"SELECT {rows.RECORD_COLUMNS} FROM memories WHERE id = ?", (mid,)
    ).fetchall()
    assert rows.record_from_values(record_values) == expected.record
    [entry] = [e for e in export_document(conn, now_ms=NOW)["memories"] if e["record"]["id"] == mid]
    assert entry["record"] == expected.record.to_wire()
    assert entry["provenance"] == expected.provenance.to_dict()
    assert (entry["local"]["seen_count"], entry["local"]["updated_at"]) == (
        expected.seen_count,
        expected.updated_at,
    )
    assert derived.drift(conn) == []


def _history(conn: sqlite3.Connection, mid: str) -> list[dict[str, Any]]:
    found = conn.execute("SELECT * FROM history WHERE id = ? ORDER BY seq", (mid,)).fetchall()
    return [dict(zip(r.keys(), r, strict=True)) for r in found]


def test_every_field_survives_insert_replace_remove_and_restore(store: MemoryStore) -> None:
    conn = store.connection
    _write(conn, FIRST, FIRST_FROM, 0.375, 41, NOW - 43)
    first = Memory(FIRST, 41, NOW - 43, FIRST_FROM)
    assert _row(conn, FIRST.id) | {"rowid": 0, "stems": ""} == _columns(conn, FIRST, FIRST_FROM) | {
        "rowid": 0, "stems": "", "local_importance": 0.375, "seen_count": 41,
        "updated_at": NOW - 43,
    }  # fmt: skip
    _read_everywhere(store, first)

    # replaced in place: every column changes, each must hold its own new value
    _write(conn, SECOND, SECOND_FROM, 0.875, 47, NOW - 59)
    second = Memory(SECOND, 47, NOW - 59, SECOND_FROM)
    expected = _columns(conn, SECOND, SECOND_FROM)
    got = _row(conn, SECOND.id)
    assert {k: got[k] for k in expected} == expected
    assert (got["local_importance"], got["seen_count"], got["updated_at"]) == (0.875, 47, NOW - 59)
    _read_everywhere(store, second)
    assert store.history(FIRST.id) == [first]
    [archived] = _history(conn, FIRST.id)
    assert (archived["local_importance"], archived["seen_count"], archived["updated_at"]) == (
        0.375, 41, NOW - 43,
    )  # fmt: skip
    assert archived["replaced_at"] == NOW - 59
    links = conn.execute("SELECT old_id, new_id FROM supersedes").fetchall()
    assert [tuple(r) for r in links] == [(NEW_LINK, FIRST.id)]

    # restored from history, as a drop does: the archived version wins again
    with transaction(conn):
        previous = load_rows(conn, [FIRST.id])[FIRST.id]
        restore = Write(FIRST, FIRST_FROM, 0.375, 41, NOW - 43, previous)
        write(conn, Batch(writes=[restore], unkept=[archived["seq"]], replaced_at=NOW - 61))
    _read_everywhere(store, first)
    assert store.history(FIRST.id) == [second]
    [archived] = _history(conn, FIRST.id)
    assert (archived["local_importance"], archived["seen_count"], archived["updated_at"]) == (
        0.875, 47, NOW - 59,
    )  # fmt: skip

    # removed: the winner leaves memories and is kept in history with its local state
    with transaction(conn):
        removed = load_rows(conn, [FIRST.id])[FIRST.id]
        write(conn, Batch(removed=[removed], replaced_at=NOW - 67))
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
    held = conn.execute("SELECT * FROM history WHERE id = ? ORDER BY seq DESC", (FIRST.id,))
    assert [rows.memory_from_history_row(r) for r in held] == [first, second]
    last = _history(conn, FIRST.id)[-1]
    assert (last["local_importance"], last["seen_count"], last["updated_at"]) == (
        0.375, 41, NOW - 43,
    )  # fmt: skip
    assert last["replaced_at"] == NOW - 67
    history = export_document(conn, now_ms=NOW)["history"]
    assert [e["record"] for e in history] == [SECOND.to_wire(), FIRST.to_wire()]
    assert [e["provenance"] for e in history] == [SECOND_FROM.to_dict(), FIRST_FROM.to_dict()]
    assert derived.drift(conn) == []


# keyword lists: what the writer stores, what another tool may have stored, and text
# shaped like the join the fast path splits
_ODD = st.sampled_from(
    ['"', "\\", ", ", '", "', '","', "[", "]", "\n", "\x00", "\x1f", "\x7f", "\u2028", "é",
     "\U0001f600", "\\u0000", " ", ",", "'"]
)  # fmt: skip
_PIECES = st.one_of(_ODD, st.characters(blacklist_categories=["Cs"]))
_WORDS = st.lists(st.lists(_PIECES, max_size=6).map("".join), max_size=6)


@st.composite
def _keyword_texts(draw: st.DrawFn) -> str:
    words = draw(_WORDS)
    how = draw(st.integers(0, 4))
    if how == 0:
        return rows._keywords_json(tuple(words), " ".join(words))
    if how == 1:
        return json.dumps(words)
    if how == 2:
        return json.dumps(words, separators=(",", ":"), ensure_ascii=False)
    if how == 3:
        return '["' + '", "'.join(words) + '"]'  # raw, unescaped: not always JSON
    shapes = st.one_of(_PIECES, st.sampled_from(['["', '"]', "[]"]))
    return "".join(draw(st.lists(shapes, max_size=12)))


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(_keyword_texts())
def test_listed_is_json_loads(text: str) -> None:
    try:
        want: Any = tuple(json.loads(text))
    except (ValueError, TypeError) as exc:
        want = type(exc)
    try:
        got: Any = rows.listed(text)
    except (ValueError, TypeError) as exc:
        got = type(exc)
    assert got == want


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_WORDS)
def test_a_keyword_list_reads_back_as_written(words: list[str]) -> None:
    stored = rows._keywords_json(tuple(words), " ".join(words))
    assert stored == json.dumps(words, ensure_ascii=False)
    assert rows.listed(stored) == tuple(words)


def _indexed(conn: sqlite3.Connection, word: str) -> list[str]:
    found = conn.execute(
        "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
        "WHERE memories_fts MATCH ? ORDER BY m.rowid",
        (word,),
    )
    return [str(r[0]) for r in found]


def _history_indexed(conn: sqlite3.Connection, word: str) -> list[str]:
    found = conn.execute(
        "SELECT h.id FROM history_fts f JOIN history h ON h.seq = f.rowid "
        "WHERE history_fts MATCH ? ORDER BY h.seq",
        (word,),
    )
    return [str(r[0]) for r in found]


def _one(i: int, word: str) -> Record:
    return FIRST.evolve(
        id=new_memory_id(NOW - 5_000 + i, bytes([i]) * 10), content=f"{word} sits here"
    )


def test_a_batch_of_one_is_indexed_at_its_rowid_whatever_else_inserts(
    store: MemoryStore,
) -> None:
    """A batch of one takes its rowid from the INSERT: another tool's trigger that
    inserts elsewhere (recursively too), a rolled-back write and a removed last row
    leave the full-text indexes pointing at the right rows."""
    conn = store.connection
    conn.execute("PRAGMA recursive_triggers = ON")
    conn.execute("CREATE TABLE audit (n INTEGER PRIMARY KEY, id TEXT)")
    conn.execute("INSERT INTO audit (n, id) VALUES (1000, 'seed')")
    for table, key in (("memories", "id"), ("history", "id")):
        conn.execute(
            f"CREATE TRIGGER audit_{table} AFTER INSERT ON {table} "
            f"BEGIN INSERT INTO audit (id) VALUES (new.{key}); END"
        )
    first, second, third = _one(1, "alpha"), _one(2, "bravo"), _one(3, "charlie")
    _write(conn, first, FIRST_FROM, 0.5, 1, NOW)
    conn.execute("SAVEPOINT undone")
    write_version(
        conn, second, provenance=FIRST_FROM, local_importance=0.5, seen_count=1, updated_at=NOW
    )
    conn.execute("ROLLBACK TO undone")
    conn.execute("RELEASE undone")
    _write(conn, third, FIRST_FROM, 0.5, 1, NOW)
    with transaction(conn):
        write(conn, Batch(removed=[load_rows(conn, [third.id])[third.id]], replaced_at=NOW))
    _write(conn, second, FIRST_FROM, 0.5, 1, NOW)
    _write(conn, second.evolve(content="delta sits here", hlc=Hlc(NOW, 0)), FIRST_FROM, 0.5, 1, NOW)
    assert [_indexed(conn, w) for w in ("alpha", "bravo", "charlie", "delta")] == [
        [first.id], [], [], [second.id],
    ]  # fmt: skip
    assert [_history_indexed(conn, w) for w in ("alpha", "bravo", "charlie")] == [
        [], [second.id], [third.id],
    ]  # fmt: skip
    assert conn.execute("SELECT count(*) FROM audit").fetchone()[0] > 1
    assert derived.drift(conn) == []
    conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(_WORDS.map(lambda ws: tuple(w[:40] for w in ws if w)), min_size=1, max_size=4))
def test_hostile_keywords_read_back_as_written(
    tmp_path_factory: pytest.TempPathFactory, lists: list[tuple[str, ...]]
) -> None:
    path = tmp_path_factory.mktemp("keywords") / "store.db"
    opened = MemoryStore.open(path, author="reader", clock=lambda: NOW)
    try:
        conn = opened.connection
        for i, words in enumerate(lists):  # a new row, then the same row replaced
            record = FIRST.evolve(keywords=words, hlc=Hlc(NOW + i, 0), supersedes=words[:0])
            _write(conn, record, FIRST_FROM, 0.5, 1, NOW)
            assert opened.get(FIRST.id).record == record
            assert rows.record_from_row(load_rows(conn, [FIRST.id])[FIRST.id]) == record
        olds = opened.history(FIRST.id)
        assert [m.record.keywords for m in reversed(olds)] == lists[:-1]
    finally:
        opened.close()
