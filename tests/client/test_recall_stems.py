"""The stems each memory keeps for recall: what every write path stores, and that
recall ranks the same with or without them."""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client import MemoryStore
from sealmem.client.store import stemmer
from sealmem.client.store.stemmer import stem
from sealmem.client.store.terms import parse_stems, stems_of, stored_stems, tokens

from .conftest import OpenStore

# words FTS5 and the stemmer see differently enough to matter: suffixes, diacritics,
# digits, underscores, capitals and punctuation
_WORDS = [
    "running", "runs", "ran", "relational", "generalization", "happily", "Résumé",
    "naïve", "PostgreSQL", "postgres", "v16", "2024-05-01", "snake_case", "don't",
    "ÉCOLE", "caresses", "ponies", "sky", "hopping", "agreed", "x", "ab", "ïes",
]  # fmt: skip
_TEXT = st.lists(
    st.one_of(st.sampled_from(_WORDS), st.text(min_size=1, max_size=12)), min_size=1, max_size=12
).map(" ".join)


def _stored(store: MemoryStore) -> dict[str, tuple[str, str, str | None]]:
    rows = store.connection.execute("SELECT id, content, keywords, stems FROM memories")
    return {row[0]: (row[1], row[2], row[3]) for row in rows}


def _check_stems(store: MemoryStore) -> int:
    rows = _stored(store)
    for content, keywords, stems in rows.values():
        assert stems is not None
        assert parse_stems(stems) == stems_of(f"{content} {keywords}")
    return len(rows)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=6))
def test_stored_stems_are_the_stems_of_the_text(texts: list[tuple[str, str]]) -> None:
    for content, keywords in texts:
        assert parse_stems(stored_stems(content, keywords)) == stems_of(f"{content} {keywords}")


def test_every_write_path_keeps_the_stems_of_what_it_wrote(open_store: OpenStore) -> None:
    rng = random.Random(16)
    store = open_store(author="ann")
    written = []
    for _ in range(30):
        words = rng.sample(_WORDS, 6)
        written.append(store.remember(" ".join(words), keywords=words[:2], project="app").memory.id)
    store.remember(" ".join(_WORDS[:5]) + " and more", keywords=["zeta"], project="app")
    assert _check_stems(store) == 31
    other = open_store(Path(store.path).with_name("other.db"), author="bob")
    assert other.import_(store.export()).added == 31  # the batch writer
    assert _check_stems(other) == 31
    store.forget(written[1], reason="wrong")  # a tombstone keeps no text
    (content, keywords, stems) = _stored(store)[written[1]]
    assert stems == stored_stems(content, keywords)


def test_a_row_without_its_stems_is_stemmed_by_recall(open_store: OpenStore) -> None:
    """Another tool's row (no stems): recall stems its text itself."""
    store = open_store(author="ann")
    memory_id = store.remember("orders live in postgres", project="app").memory.id
    conn = store.connection
    conn.execute("UPDATE memories SET stems = NULL WHERE id = ?", (memory_id,))
    hits = store.recall("postgres orders", k=3, project="app")
    assert [hit.memory.id for hit in hits] == [memory_id]
    assert hits[0].why["coverage"] > 0  # the terms come from the text, stemmed at recall


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_recall_ranks_the_same_with_and_without_stored_stems(seed: int) -> None:
    rng = random.Random(seed)
    now = [1_767_225_600_000]
    with (
        tempfile.TemporaryDirectory() as tmp,
        MemoryStore.open(Path(tmp) / "store.db", author="ann", clock=lambda: now[0]) as store,
    ):
        for i in range(40):
            now[0] += rng.choice([60_000, 3_600_000 * 5])
            words = rng.choices(_WORDS, k=rng.randint(3, 9))
            origin = "cli" if i % 3 else f"mcp:s{i // 6}"
            store.remember(" ".join(words), keywords=words[:1], project="app", origin=origin)
        queries = [" ".join(rng.sample(_WORDS, rng.randint(1, 4))) for _ in range(8)]
        with_stems = [_ranked(store, q) for q in queries]
        assert any(with_stems)
        store.connection.execute("UPDATE memories SET stems = NULL")
        assert [_ranked(store, q) for q in queries] == with_stems


def _ranked(store: MemoryStore, query: str) -> list[tuple[str, float, dict[str, float]]]:
    hits = store.recall(query, k=10, project="app")
    return [(hit.memory.id, hit.score, hit.why) for hit in hits]


@settings(max_examples=300, deadline=None)
@given(text=st.text(st.characters(max_codepoint=127)))
def test_ascii_tokens_split_as_the_token_pattern_splits_the_lowered_text(text: str) -> None:
    # ASCII text takes a faster path (translate + split); other text is tokenized by
    # SQLite itself (tests/client/test_recall_terms_tokens.py)
    assert tokens(text) == re.findall(r"[^\W_]+", text.lower())


@given(st.from_regex(r"[0-9]{1,70}", fullmatch=True))
def test_a_number_is_its_own_stem_as_the_algorithm_gives_it(word: str) -> None:
    """``stem`` returns a number as it is without running (or caching) the steps: the
    same as the steps give."""
    assert stem(word) == word == stemmer._stem(word)
