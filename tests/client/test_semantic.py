"""The semantic extra (client/recall/semantic.py): local vectors, never synced, derived
outside the one writer, one seam in recall.  Real stores; the real model where it is
installed (the ``test`` extra installs it); the default path without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.recall import embedder, search, semantic

needs_model = pytest.mark.skipif(
    not semantic.available(), reason="the semantic extra is not installed"
)

MEMORIES = [
    "Orders live in PostgreSQL 16 on the db host",
    "Attachments go to the S3 bucket acme-prod-files, never to local disk",
    "The suite runs under pytest with xdist; run it with make test",
    "No production releases after 15:00 on Fridays: the on-call rota is thin",
    "Code style is enforced by ruff format and ruff check in CI",
    "Sign-in goes through OpenID Connect with Keycloak as the identity provider",
]
PARAPHRASE = "where do uploads end up"  # shares no word with the attachments memory (0.36)
CLOSE = "which database do we use"  # closest to the PostgreSQL memory (0.16), under the threshold


def vectors(store: MemoryStore) -> int:
    (n,) = store.connection.execute("SELECT count(*) FROM embeddings").fetchone()
    return int(n)


def lexical(store: MemoryStore, query: str) -> list[tuple[str, float]]:
    found = search.search(
        store.connection, query, k=5, projects=["p"], include_history=False, kinds=None,
        now_ms=2_000_000_000_000,  # one instant: the recency part stays put
    )  # fmt: skip
    return [(s.id, s.score) for s in found]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore.open(tmp_path / "store.db", author="me") as opened:
        for i, text in enumerate(MEMORIES):
            opened.remember(text, project="p", origin=f"test:m{i}")
        yield opened


@pytest.fixture(scope="module")
def model() -> semantic.Embedder:
    embedder = semantic.Embedder()
    if semantic.available():
        embedder.query("load the model once for the module")
    return embedder


@pytest.fixture
def on(model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch) -> Iterator[semantic.Embedder]:
    """This process recalls by meaning (as the MCP server and the viewer do)."""
    monkeypatch.setattr(semantic, "_ACTIVE", model)
    yield model
    semantic.stop()


def test_without_the_extra_recall_is_lexical_and_nothing_starts(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    monkeypatch.delenv(semantic.ENV)
    assert semantic.available() is False
    assert semantic.start(store.path) is False
    assert semantic.active() is None
    assert semantic.similarities(store.connection, PARAPHRASE, [1, 2]) == {}
    assert store.recall("pytest xdist", project="p")[0].memory.content == MEMORIES[2]
    assert "semantic" not in store.recall("pytest xdist", project="p")[0].why
    assert vectors(store) == 0


@needs_model
def test_a_model_file_that_is_not_the_pinned_one_is_refused_and_recall_stays_lexical(
    tmp_path: Path, store: MemoryStore, model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    semantic.fill(store.connection, model)
    real = embedder.model_files()
    assert real is not None
    copies = [tmp_path / path.name for path in real]
    for path, copy in zip(real, copies, strict=True):
        copy.write_bytes(path.read_bytes())
    tampered = bytearray(copies[0].read_bytes())
    tampered[len(tampered) // 2] ^= 1  # one bit of the weights
    copies[0].write_bytes(bytes(tampered))
    monkeypatch.setattr(embedder, "model_files", lambda: copies)
    planted = semantic.Embedder()
    with pytest.raises(embedder.ModelFileError, match="is not the one sealmem pins") as refused:
        planted.query(PARAPHRASE)
    assert str(copies[0]) in str(refused.value)
    assert "pip install --force-reinstall" in str(refused.value)
    monkeypatch.setattr(semantic, "_ACTIVE", planted)
    try:
        assert semantic.similarities(store.connection, PARAPHRASE, [1, 2]) == {}
        hits = store.recall("pytest xdist", project="p")
        assert hits[0].memory.content == MEMORIES[2]
        assert "semantic" not in hits[0].why
    finally:
        semantic.stop()


def test_only_the_closest_memories_over_the_threshold_match_by_meaning() -> None:
    """A cosine alone says little (a chatty store has many over any threshold): the query's
    BEST closest match, each at or over THRESHOLD; the rest only re-rank."""
    over = semantic.THRESHOLD + 0.01
    cosines = {7: over + 0.2, 3: over + 0.1, 9: over, 4: semantic.THRESHOLD - 0.05}
    assert semantic.BEST == 2
    assert semantic.matching(cosines) == {7, 3}
    assert semantic.matching({4: semantic.THRESHOLD - 0.05, 5: 0.0}) == set()
    assert semantic.matching({9: over, 4: semantic.THRESHOLD - 0.05}) == {9}


def test_the_switch_keeps_a_server_lexical(store: MemoryStore) -> None:
    assert os.environ[semantic.ENV] == "0"  # tests/conftest.py
    assert semantic.start(store.path) is False
    assert semantic.active() is None


@needs_model
@pytest.mark.slow
def test_a_paraphrase_finds_its_memory_and_lexical_recall_is_unchanged(
    store: MemoryStore, model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {q: lexical(store, q) for q in (PARAPHRASE, "pytest xdist", "releases on Friday")}
    assert semantic.fill(store.connection, model) == len(MEMORIES)
    assert {q: lexical(store, q) for q in before} == before  # vectors there, extra off

    monkeypatch.setattr(semantic, "_ACTIVE", model)
    try:
        hits = store.recall(PARAPHRASE, project="p")
        assert hits[0].memory.content == MEMORIES[1]
        assert hits[0].why["semantic"] == pytest.approx(semantic.WEIGHT)
        # a cosine under semantic.THRESHOLD only re-ranks: alone, it matches nothing
        assert store.recall(CLOSE, project="p") == []
        # a word query keeps its lexical winner on top
        assert store.recall("pytest xdist", project="p")[0].memory.content == MEMORIES[2]
        # the query vector is cached: asked again, the model is not called
        cached = len(model._queries)
        store.recall(PARAPHRASE, project="p")
        assert len(model._queries) == cached
    finally:
        semantic.stop()
    assert {q: lexical(store, q) for q in before} == before


@needs_model
@pytest.mark.slow
def test_forgetting_drops_the_vector_with_the_text(
    store: MemoryStore, on: semantic.Embedder
) -> None:
    semantic.fill(store.connection, on)
    first = store.recall(PARAPHRASE, project="p")[0].memory
    rowid = store.connection.execute("SELECT rowid FROM memories WHERE id = ?", (first.id,))
    (row,) = rowid.fetchone()
    old = store.connection.execute("SELECT vector FROM embeddings WHERE rowid = ?", (row,))
    old_vector = old.fetchone()[0]
    store.forget(first.id, reason="moved to a new host")
    left = store.connection.execute("SELECT count(*) FROM embeddings WHERE rowid = ?", (row,))
    assert tuple(left.fetchone()) == (0,)
    assert vectors(store) == len(MEMORIES) - 1
    assert semantic.fill(store.connection, on) == 0  # a tombstone gets no vector
    hits = store.recall(PARAPHRASE, project="p")
    assert all(h.memory.id != first.id for h in hits)
    assert old_vector  # it was there before


@needs_model
@pytest.mark.slow
def test_bulk_writes_and_imports_derive_no_vector(
    tmp_path: Path, store: MemoryStore, on: semantic.Embedder
) -> None:
    document = store.export()
    with MemoryStore.open(tmp_path / "other.db", author="you") as other:
        other.import_(document)
        for i in range(20):
            other.remember(f"bulk note {i} about the deploy", project="p", origin="cli")
        assert vectors(other) == 0  # the writer derives none, even with the extra active
        (live,) = other.connection.execute(
            "SELECT count(*) FROM memories WHERE deleted = 0"
        ).fetchone()
        assert semantic.fill(other.connection, on) == live  # the background pass does


@needs_model
@pytest.mark.slow
def test_reindex_derives_every_vector_again(store: MemoryStore, model: semantic.Embedder) -> None:
    semantic.fill(store.connection, model)
    before = dict(store.connection.execute("SELECT rowid, vector FROM embeddings"))
    store.connection.execute("UPDATE embeddings SET vector = zeroblob(384)")  # damaged
    store.reindex()  # the store alone drops them (it cannot derive them)
    assert vectors(store) == 0
    store.close()
    env = {k: v for k, v in os.environ.items() if k != semantic.ENV}
    env["SEALMEM_HOME"] = str(store.path.parent)
    done = subprocess.run(
        [sys.executable, "-m", "sealmem.client.cli", "reindex", "--json"],
        env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reindexed"]["vectors"] == len(MEMORIES)
    with MemoryStore.open(store.path, author="me") as again:
        after = dict(again.connection.execute("SELECT rowid, vector FROM embeddings"))
    assert after == before


@needs_model
@pytest.mark.slow
def test_a_long_lived_process_fills_the_vectors_in_the_background(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(semantic.ENV)
    try:
        assert semantic.start(store.path) is True
        deadline = time.monotonic() + 60
        while vectors(store) < len(MEMORIES) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert vectors(store) == len(MEMORIES)
        assert store.recall(PARAPHRASE, project="p")[0].memory.content == MEMORIES[1]
    finally:
        semantic.stop()
    assert semantic.active() is None
