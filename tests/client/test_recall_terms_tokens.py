"""The kept counts of frequent terms (schema version 12) are kept by the triggers from
``memories.stems``, which Python's tokenizer writes; the counts they stand for are the
full-text index's, which FTS5's unicode61 tokenizer writes.  The two split alike on
ASCII text but not on much else (a private-use or unassigned character joins a word in
FTS5 and splits it in Python; a compatibility character is folded by one only), so a
memory holding such text moves a kept count the index does not move, and recall reads
the wrong count while ``counted`` still equals the rows held.

Known and not yet fixed: the fix needs a tokenizer that splits and folds as unicode61
does, and a schema version that refills the stems (and keeps the counts from the
index's own terms).  Strict xfail:
it fails the suite once the counts are exact again, so the marker is then removed."""

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


@pytest.mark.xfail(strict=True, reason="stems are not the index's terms for non-ASCII text")
@pytest.mark.parametrize("text", ["deploy\ue000 the orders", "deploy\U000148be today"])
def test_a_word_the_two_tokenizers_split_apart_keeps_the_counts_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setattr(frequent, "FREQUENT_DOCS", 3)
    with MemoryStore.open(tmp_path / "s.db", author="ann") as store:
        for i in range(6):  # filled at 3 and 6 memories: the next fill is at 12
            store.remember(f"deploy the orders service {i}")
        conn = store.connection
        assert "deploi" in stored_stems(text, "").split()  # Python: "deploy" + separator
        store.remember(text)  # a teammate's pulled version goes the same way
        kept = dict(conn.execute("SELECT term, docs FROM term_counts"))
        counted, memories = conn.execute(
            "SELECT (SELECT counted FROM term_counts_at), (SELECT memories FROM store_counts)"
        ).fetchone()
        indexed = _indexed(conn)
        # either the count is the index's, or recall does not read it
        assert counted != memories or kept["deploi"] == indexed["deploi"]


@pytest.mark.xfail(strict=True, reason="the query is folded by Python, the index by unicode61")
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
        assert [hit.memory.id for hit in store.recall(query)] == [memory.id]
