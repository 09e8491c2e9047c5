"""Streaming export and batched, streaming import.

- The batched import stores what importing one entry at a time stores (the same
  merge decisions, rows, links, floors, full-text answers), for random documents
  with repeated ids, ties, tombstones, floors and supersedes, read from memory or
  streamed in any layout (the old indented export, history before memories).
- ``sealmem export`` and ``sealmem import`` hold one entry at a time: the memory
  they allocate does not grow with the store (the finding: 877 MB for 100k).
"""

from __future__ import annotations

import io
import json
import sqlite3
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from sealmem.client import MemoryStore
from sealmem.client.store import transfer
from sealmem.client.store.export import FORMAT
from sealmem.protocol.errors import InputError
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.support.cli import Run, in_process
from tests.support.versions import versions

NOW = 1_800_000_000_000
WORDS = ["a", "b", "use", "uv", "db", "ci", "obsolete"]


@contextmanager
def _store(root: Path, name: str) -> Iterator[MemoryStore]:
    store = MemoryStore.open(root / f"{name}.db", author="reader", clock=lambda: NOW)
    try:
        yield store
    finally:
        store.close()


def _contents(conn: sqlite3.Connection) -> dict[str, Any]:
    """What an import writes.  History is compared per id in order (its sequence
    numbers interleave ids differently when entries are written a batch at a time)."""
    history = conn.execute(
        "SELECT id, record_json, local_importance, seen_count, updated_at, transport, signer, "
        "signer_name, verified, received_at, snapshot_seq, replaced_at FROM history "
        "ORDER BY id, seq"
    ).fetchall()
    return {
        "memories": [tuple(r) for r in conn.execute("SELECT * FROM memories ORDER BY rowid")],
        "history": [tuple(r) for r in history],
        "links": [tuple(r) for r in conn.execute("SELECT * FROM supersedes ORDER BY 1, 2")],
        "hlc": conn.execute("SELECT value FROM meta WHERE key = 'hlc'").fetchall(),
        "fts": {
            w: conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid",
                (f'"{w}"',),
            ).fetchall()
            for w in WORDS
        },
        "history_fts": {
            w: conn.execute(
                "SELECT h.id, h.record_json FROM history_fts f JOIN history h ON h.seq = f.rowid "
                "WHERE history_fts MATCH ? ORDER BY 1, 2",
                (f'"{w}"',),
            ).fetchall()
            for w in WORDS
        },
    }


def _entry(record: Record, local: int, history: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "record": record.to_wire(),
        "local": {"local_importance": local / 10, "seen_count": 1 + local, "updated_at": local},
        "provenance": {"signer": record.editor, "transport": "folder"},
    }
    if history:
        entry["replaced_at"] = NOW - local
    return entry


entries = st.lists(st.tuples(versions(), st.integers(0, 10)), max_size=16)


def test_a_streamed_export_imports_like_the_document(tmp_path: Path) -> None:
    """export_to writes the same document as export(), one entry per line."""
    with _store(tmp_path, "source") as source:
        first = source.remember("the deploy key lives in the vault", keywords=["deploy"]).memory
        source.remember("the deploy key lives in the vault, path ops/deploy", supersedes=[first.id])
        gone = source.remember("the staging box is called mule").memory
        source.forget(gone.id, reason="renamed")
        out = io.StringIO()
        assert source.export_to(out) == 3
        text = out.getvalue()
        assert json.loads(text) == source.export()
        assert all(len(line) < 2_000 for line in text.splitlines())  # one entry a line
        with _store(tmp_path, "a") as a, _store(tmp_path, "b") as b:
            assert a.import_stream(io.StringIO(text)) == b.import_(source.export())
            assert _contents(a.connection) == _contents(b.connection)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "holds a JSON list, not an export document"),
        ('{"format": "other", "version": 1, "memories": []}', "not a sealmem export"),
        ('{"version": 9, "format": "sealmem-export"}', "upgrade sealmem"),
        ('{"format": "sealmem-export", "version": 1, "memories": {}}', "must be a list"),
        ('{"format": "sealmem-export", "version": 1} trailing', "goes on after"),
    ],
)
def test_a_bad_stream_is_refused_and_nothing_is_written(
    tmp_path: Path, text: str, message: str
) -> None:
    with _store(tmp_path, "target") as store:
        with pytest.raises(Exception, match=message):
            store.import_stream(io.StringIO(text))
        assert store.connection.execute("SELECT count(*) FROM memories").fetchone()[0] == 0


@pytest.mark.parametrize(
    "entry",
    ["[" * 100_000 + "]" * 100_000, "9" * 5000],
    ids=["nested-too-deeply", "integer-too-long"],
)
def test_an_entry_python_cannot_parse_is_refused_as_not_json(tmp_path: Path, entry: str) -> None:
    """An entry nested too deeply (the decoder's RecursionError) or an integer of more
    than 4300 digits (a ValueError that is no JSONDecodeError) escaped the scanner as
    that error, not as the refusal that names the file and where in it."""
    text = f'{{"format": "{FORMAT}", "version": 1, "memories": [{entry}]}}'
    with _store(tmp_path, "target") as store:
        with pytest.raises(InputError, match="is not JSON"):
            store.import_stream(io.StringIO(text))
        assert store.connection.execute("SELECT count(*) FROM memories").fetchone()[0] == 0


def test_a_bad_entry_late_in_a_stream_writes_nothing(tmp_path: Path) -> None:
    good = _entry(_record(1), 1, False)
    text = json.dumps(
        {"format": FORMAT, "version": 1, "memories": [good] * 3 + [{"record": {"id": 1}}]}
    )
    with _store(tmp_path, "target") as store:
        with pytest.raises(Exception, match=r"memories\[3\]"):
            store.import_stream(io.StringIO(text))
        assert store.connection.execute("SELECT count(*) FROM memories").fetchone()[0] == 0


def _record(i: int, now: int = NOW) -> Record:
    return Record(
        id=new_memory_id(now - 1_000_000 + i, i.to_bytes(10, "big")),
        project="webapp",
        kind="note",
        content=f"memory {i}: the build cache is keyed by the lockfile hash " + "x" * 400,
        keywords=("cache", f"k{i}"),
        importance=0.5,
        author="alice",
        editor="alice",
        created_at=now - 1_000_000,
        hlc=Hlc(now - 1_000_000, i % 60_000),
    )


def _peak(run: Callable[[], Run]) -> int:
    tracemalloc.start()
    try:
        result = run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.code == 0, result.err
    return peak


@pytest.mark.slow
def test_export_and_import_memory_does_not_grow_with_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python allocations of 'sealmem import' and 'sealmem export' at 250 and 2,500
    memories (~0.6 KB each): streamed, the larger store costs about what the smaller
    does; a whole document in memory costs ten times as much."""
    cli = in_process(capsys, monkeypatch)
    monkeypatch.setattr(transfer, "BATCH", 100)  # held at most: one batch, below both sizes
    peaks: dict[int, tuple[int, int]] = {}
    for n in (10, 250, 2_500):  # the first run warms up (lazy imports, a new store)
        monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / f"home{n}"))
        source = tmp_path / f"in{n}.json"
        now = time.time_ns() // 1_000_000  # the CLI's clock: records dated before it
        memories = [_entry(_record(i, now), 5, False) for i in range(n)]
        source.write_text(json.dumps({"format": FORMAT, "version": 1, "memories": memories}))
        imported = _peak(lambda: cli("import", str(source)))  # noqa: B023
        exported = _peak(lambda: cli("export", "-o", str(tmp_path / f"out{n}.json")))  # noqa: B023
        peaks[n] = (imported, exported)
        assert len(json.loads((tmp_path / f"out{n}.json").read_text())["memories"]) == n
    small, large = peaks[250], peaks[2_500]
    assert large[0] < small[0] * 2 + 500_000, peaks  # import
    assert large[1] < small[1] * 2 + 500_000, peaks  # export
