"""Schema version 13: the stems of non-ASCII memories are filled again with the index's
own terms and the frequent terms counted again; a ``stems`` value that is not a clean
word list makes the counting triggers forget the counts instead of failing the write."""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from pathlib import Path

import pytest

from sealmem.client.recall import frequent
from sealmem.client.store.connection import connect
from sealmem.client.store.schema import MIGRATIONS, latest_version
from sealmem.client.store.stemmer import stem
from tests.support.old_schema import rewind_schema

from .conftest import OpenStore


def _python_stems(content: str, keywords: str) -> str:
    """``memories.stems`` as the code before version 13 wrote it for non-ASCII text:
    NFKD, combining marks dropped, lower-cased, split on non-word characters."""
    decomposed = unicodedata.normalize("NFKD", f"{content} {keywords}")
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()
    return " ".join(sorted({stem(word) for word in re.findall(r"[^\W_]+", folded)}))


def _terms_by_row(conn: sqlite3.Connection) -> dict[int, frozenset[str]]:
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.test_v13_instances "
        "USING fts5vocab(main, memories_fts, instance)"
    )
    found: dict[int, set[str]] = {}
    for term, rowid in conn.execute("SELECT term, doc FROM temp.test_v13_instances"):
        found.setdefault(rowid, set()).add(term)
    return {rowid: frozenset(terms) for rowid, terms in found.items()}


def _indexed(conn: sqlite3.Connection) -> dict[str, int]:
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.test_v13_vocab "
        "USING fts5vocab(main, memories_fts, row)"
    )
    return dict(conn.execute("SELECT term, doc FROM temp.test_v13_vocab"))


def test_a_store_of_version_12_gets_the_index_terms_of_its_non_ascii_memories(
    tmp_path: Path, open_store: OpenStore
) -> None:
    path = tmp_path / "old.db"
    source = open_store(tmp_path / "source.db", author="bob")
    for i in range(1100):  # frequent: held by at least 1,000 memories
        source.remember(f"deploy\ue000 the мойка service {i}", keywords=["Ёлка"], project="app")
    for i in range(5):
        source.remember(f"plain ascii orders note {i}", project="app")
    store = open_store(path, author="ann")
    store.import_(source.export())
    store.close()
    conn = connect(path)
    rewind_schema(conn, 12)
    conn.close()
    conn = connect(path, migrations=MIGRATIONS[:12])  # a store as version 12 left it
    conn.create_function("old_stems", 2, _python_stems, deterministic=True)
    conn.execute("UPDATE memories SET stems = old_stems(content, keywords)")
    ascii_before = dict(conn.execute("SELECT id, stems FROM memories WHERE content LIKE 'plain%'"))
    # what the counting triggers kept from Python's stems: "deploy" split off its
    # private-use character, "мойка" folded to "моика"
    conn.execute("DELETE FROM term_counts")
    conn.execute("INSERT INTO term_counts (term, docs) VALUES ('deploi', 1100), ('моика', 1100)")
    assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] == 12
    conn.close()

    reopened = open_store(path, author="ann")
    conn = reopened.connection
    assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] == (
        latest_version()
    )
    terms = _terms_by_row(conn)
    rows = list(conn.execute("SELECT rowid, id, stems FROM memories"))
    assert len(rows) == 1105
    for rowid, _, stems in rows:
        assert frozenset(stems.split(" ")) == terms[rowid]
    assert {i: s for _, i, s in rows if i in ascii_before} == ascii_before  # left alone
    indexed = _indexed(conn)
    kept = dict(conn.execute("SELECT term, docs FROM term_counts"))
    assert kept == {term: docs for term, docs in indexed.items() if docs >= 1000}
    assert kept["deploy\ue000"] == kept["мойка"] == kept["ёлка"] == 1100
    assert tuple(conn.execute("SELECT memories, counted FROM term_counts_at").fetchone()) == (
        1105,
        1105,
    )
    hits = reopened.recall("мойка", k=5, project="app")
    assert len(hits) == 5
    assert all(hit.why["bm25"] > 0 for hit in hits)


# a quote, a backslash (a JSON escape once put between quotes), a control character
_UNCLEAN = ['order "x', "order \\u0041", "order\\", "order\tqueue", "order\x00"]


@pytest.mark.parametrize("value", _UNCLEAN)
@pytest.mark.parametrize("write", ["insert", "update", "delete"])
def test_a_stems_value_that_is_not_a_word_list_forgets_the_counts_instead_of_failing(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch, value: str, write: str
) -> None:
    monkeypatch.setattr(frequent, "FREQUENT_DOCS", 3)
    store = open_store(author="ann")
    ids = [store.remember(f"orders queue {i}", project="app").memory.id for i in range(6)]
    conn = store.connection
    assert dict(conn.execute("SELECT term, docs FROM term_counts"))["order"] == 6
    if write == "insert":
        conn.execute(
            "INSERT INTO memories (id, project, kind, content, importance, local_importance, "
            "author, editor, created_at, hlc_wall, hlc_counter, origin, visibility, updated_at, "
            "stems) SELECT id || 'x', project, kind, content, importance, local_importance, "
            "author, editor, created_at, hlc_wall, hlc_counter + 1, origin, visibility, "
            "updated_at, ? FROM memories WHERE id = ?",
            (value, ids[0]),
        )
    elif write == "update":
        conn.execute(
            "UPDATE memories SET content = 'orders later', stems = ? WHERE id = ?", (value, ids[0])
        )
    else:
        conn.execute("UPDATE memories SET stems = ? WHERE id = ?", (value, ids[0]))
        conn.execute("DELETE FROM memories WHERE id = ?", (ids[0],))
    assert list(conn.execute("SELECT term, docs FROM term_counts")) == []
    assert tuple(conn.execute("SELECT memories FROM term_counts_at").fetchone()) == (0,)
    hits = store.recall("orders", k=10, project="app")  # the index's counts: walked
    assert len(hits) == 6 + (write == "insert") - (write == "delete")
