"""Non-ASCII text is split and folded as the full-text index does (issue 16).

The kept counts of frequent terms (schema version 12) are kept by the triggers from
``memories.stems``, which the write path computes; the counts they stand for are the
full-text index's, which FTS5's unicode61 tokenizer writes.  Python's own split
agreed with it on ASCII text but not on much else (a private-use or unassigned
character joins a word in FTS5 and split it in Python; "й" and a Hangul syllable are
kept whole by unicode61 and were folded apart by NFKD), so a kept count drifted and a
query word such as "мойка" matched no index term.  Text with a non-ASCII character is
now tokenized by SQLite itself (:mod:`sealmem.client.recall.terms`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.recall import frequent
from sealmem.client.recall.terms import stored_stems


def _indexed(conn: sqlite3.Connection) -> dict[str, int]:
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.test_vocab "
        "USING fts5vocab(main, memories_fts, row)"
    )
    return dict(conn.execute("SELECT term, doc FROM temp.test_vocab"))


@pytest.mark.parametrize("text", ["deploy\ue000 the orders", "deploy\U000148be today"])
def test_a_word_the_two_tokenizers_split_apart_keeps_the_counts_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setattr(frequent, "FREQUENT_DOCS", 3)
    with MemoryStore.open(tmp_path / "s.db", author="ann") as store:
        for i in range(6):  # filled at 3 and 6 memories: the next fill is at 12
            store.remember(f"deploy the orders service {i}")
        conn = store.connection
        # the index keeps the word whole (unicode61 joins the character to it); so do the stems
        assert "deploi" not in stored_stems(text, "").split()
        store.remember(text)  # a teammate's pulled version goes the same way
        kept = dict(conn.execute("SELECT term, docs FROM term_counts"))
        counted, memories = conn.execute(
            "SELECT (SELECT counted FROM term_counts_at), (SELECT memories FROM store_counts)"
        ).fetchone()
        indexed = _indexed(conn)
        # either the count is the index's, or recall does not read it
        assert counted != memories or kept["deploi"] == indexed["deploi"]


@pytest.mark.parametrize(
    ("text", "query"),
    [("сервер мойка настроен", "мойка"), ("한국어 배포 설정은 서버에 있다", "배포")],
)
def test_a_word_with_a_letter_the_two_tokenizers_fold_apart_is_recalled(
    tmp_path: Path, text: str, query: str
) -> None:
    """Known since before the kept counts: a query word is folded by Python (NFKD, marks
    dropped: "й" becomes "и", a Hangul syllable its letters) and matched against the
    index's terms, which unicode61 folded otherwise; such a word is never found."""
    with MemoryStore.open(tmp_path / "s.db", author="ann") as store:
        memory = store.remember(text).memory
        store.remember("another text about caches")
        hits = store.recall(query)
        # found by the index (the other memory may follow as its session neighbour)
        assert [hit.memory.id for hit in hits if hit.why["bm25"] > 0] == [memory.id]
        assert hits[0].memory.id == memory.id
