"""The Python stemmer stems every ASCII word as SQLite's FTS5 ``porter`` tokenizer does
(differential test against SQLite itself)."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sealmem.client.store.stemmer import _STEP2, _STEP3, _STEP4, stem

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
