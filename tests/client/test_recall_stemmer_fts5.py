"""The Python stemmer stems every ASCII word as SQLite's FTS5 ``porter`` tokenizer does
(differential test against SQLite itself), and schema version 14 fills ``stems`` again
for the memories whose words it used to stem otherwise (``eed``, ``ies``, ``sses``,
``yyed``, ...), then counts the frequent terms again from the index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sealmem.client.recall.stemmer import _STEP2, _STEP3, _STEP4, stem
from sealmem.client.recall.terms import stored_stems
from sealmem.client.store.connection import connect
from sealmem.client.store.schema import MIGRATIONS, latest_version
from tests.support.old_schema import rewind_schema

from .conftest import OpenStore

_SUFFIXES = sorted(
    {s for s, _ in _STEP2}
    | {s for s, _ in _STEP3}
    | set(_STEP4)
    | {"eed", "ed", "ing", "ies", "sses", "ss", "s", "es", "at", "bl", "iz", "e", "ll", "y"}
)


def _fts5_stems(words: list[str]) -> list[str]:
    """SQLite's own porter stem of each word (ASCII tokenizer: the words as given)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter ascii')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        conn.execute("INSERT INTO t VALUES (?)", (" ".join(words),))
        found = dict(conn.execute("SELECT offset, term FROM v"))
    finally:
        conn.close()
    return [found[i] for i in range(len(words))]


def test_every_suffix_and_its_neighbours_stem_as_fts5_does() -> None:
    """Each rule's suffix as a whole word and behind the prefixes that change which
    rule applies (a vowel, a ``y``), with the endings steps 1a and 1b strip first."""
    words = sorted(
        {
            prefix + suffix + ending
            for suffix in _SUFFIXES
            for ending in ("", "s", "es", "ed", "ing")
            for prefix in ("", "y", "yy", "a", "e", "i", "o", "b", "st", "ea", "oy")
            if 2 < len(prefix + suffix + ending) <= 64
        }
    )
    assert [stem(w) for w in words] == _fts5_stems(words)


_WORDS = st.builds(
    lambda head, suffix, tail: head + suffix + tail,
    st.text(alphabet="aeiouybcdlmnrstz", max_size=6),
    st.sampled_from(_SUFFIXES),
    st.sampled_from(["", "s", "ed", "ing"]),
).filter(lambda w: 2 < len(w) <= 64)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(words=st.lists(_WORDS, min_size=1, max_size=50))
@example(words=["eed", "eeds", "ies", "sses", "yyed", "yying", "pfoyyed", "wleyyed"])
def test_random_words_stem_as_fts5_does(words: list[str]) -> None:
    assert [stem(w) for w in words] == _fts5_stems(words)


@pytest.mark.slow
def test_a_store_of_version_13_gets_the_stems_the_stemmer_now_gives(
    tmp_path: Path, open_store: OpenStore
) -> None:
    path = tmp_path / "old.db"
    source = open_store(tmp_path / "source.db", author="bob")
    for i in range(1000):  # "e" frequent: held by at least 1,000 memories
        source.remember(f"the eed batch {i}", project="app")
    source.remember("queries of sses and yyed words", keywords=["ies"], project="app")
    plain = source.remember("plain orders note", project="app").memory.id
    store = open_store(path, author="ann")
    store.import_(source.export())
    store.close()
    conn = connect(path)
    rewind_schema(conn, 13)
    conn.close()
    conn = connect(path, migrations=MIGRATIONS[:13])  # a store as version 13 left it
    # what the stemmer before wrote for these rows, and what the triggers counted of it
    conn.execute("UPDATE memories SET stems = 'batch eed the' WHERE content LIKE 'the eed%'")
    conn.execute(
        "UPDATE memories SET stems = 'and i of queri ss word yy' WHERE content LIKE 'queries%'"
    )
    conn.execute("UPDATE memories SET stems = 'left alone' WHERE id = ?", (plain,))
    conn.execute("DELETE FROM term_counts")
    conn.execute("INSERT INTO term_counts (term, docs) VALUES ('eed', 1000), ('the', 1000)")
    conn.close()

    reopened = open_store(path, author="ann")
    conn = reopened.connection
    assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] == (
        latest_version()
    )
    for content, keywords, stems in conn.execute(
        "SELECT content, keywords, stems FROM memories WHERE id != ?", (plain,)
    ):
        assert stems == stored_stems(content, keywords)
    assert "e" in stored_stems("the eed batch 1", "").split(" ")
    # a row holding none of the letter sequences is not read again
    assert conn.execute("SELECT stems FROM memories WHERE id = ?", (plain,)).fetchone()[0] == (
        "left alone"
    )
    kept = dict(conn.execute("SELECT term, docs FROM term_counts"))
    assert kept["e"] == 1000  # counted from the index: "eed" is indexed as "e"
    assert "eed" not in kept
    hits = reopened.recall("eed", k=3, project="app")
    assert len(hits) == 3
