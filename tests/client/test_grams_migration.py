"""Migration 7 gives a store of before it the grams of its rows, migration 11 the grams
of Hangul runs and of one character, migration 12 those of the composed letters (NFC),
and ``reindex`` builds them again: a word inside a Chinese, Japanese or Korean run, one
character, and an emoji, are found after."""

from __future__ import annotations

import sqlite3
import unicodedata
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store import scripts
from sealmem.client.store.connection import connect, transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.migrations import MigrationNeededError
from sealmem.client.store.schema import MIGRATIONS, latest_version
from sealmem.client.store.terms import word_stems
from sealmem.client.store.writer import write_version
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import new_memory_id

NOW = 1_767_225_600_000
AUTHOR = "a" * 26
TEXTS = ["退款需要财务审批后才能处理", "日本語のメモ", "deploy is on fire 🔥", "plain ascii words"]


def _store_of_version_6(path: Path) -> list[str]:
    """A store as version 6 wrote it: the rows, their stems of the words unicode61 sees
    and a two-column index filled by the writer of then."""
    conn = connect(path, now_ms=NOW, migrations=MIGRATIONS[:6], journaled=False)
    ids = []
    with conn:
        for n, text in enumerate(TEXTS, 1):
            mid = new_memory_id(NOW + n, bytes([n]) * 10)
            stems = " ".join(sorted({stem for _, stem in word_stems(text)}))
            cur = conn.execute(
                "INSERT INTO memories (id, project, kind, content, importance, local_importance, "
                "author, editor, created_at, hlc_wall, hlc_counter, origin, visibility, "
                "updated_at, stems) VALUES (?, 'app', 'note', ?, 0.5, 0.5, ?, ?, ?, ?, 0, 'cli', "
                "'team', ?, ?)",
                (mid, text, AUTHOR, AUTHOR, NOW, NOW + n, NOW, stems),
            )  # fmt: skip
            conn.execute(
                "INSERT INTO memories_fts (rowid, content, keywords) VALUES (?, ?, '')",
                (cur.lastrowid, text),
            )
            conn.execute("UPDATE store_counts SET memories = memories + 1")
            ids.append(mid)
    conn.close()
    return ids


def _found(store: MemoryStore, query: str) -> list[str]:
    """The matches (not the related neighbours) of ``query``."""
    return [hit.memory.id for hit in store.recall(query, k=5, project="app") if not hit.related]


def test_a_store_of_version_6_finds_words_inside_runs_after_the_migration(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.db"
    refund, memo, fire, plain = _store_of_version_6(path)
    with MemoryStore.open(path, author=AUTHOR, clock=lambda: NOW) as store:
        conn = store.connection
        (version,) = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        assert version == latest_version()
        assert _found(store, "退款")[:1] == [refund]
        assert _found(store, "メモ")[:1] == [memo]
        assert _found(store, "🔥")[:1] == [fire]
        assert _found(store, "ascii")[:1] == [plain]
        grams = dict(conn.execute("SELECT id, grams FROM memories").fetchall())
        assert grams[plain] is None
        assert grams[memo] == "日本 本語 語の のメ メモ モ"
        conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
        checks = {check.name: check.ok for check in store.doctor()}
        assert (checks["fts"], checks["schema"]) == (True, True)


def test_reindex_builds_the_grams_again(tmp_path: Path) -> None:
    with MemoryStore.open(tmp_path / "store.db", author=AUTHOR, clock=lambda: NOW) as store:
        memo = store.remember("日本語のメモ", project="app").memory.id
        conn = store.connection
        # another tool's write: the text without its grams, nor in the index
        conn.execute("UPDATE memories SET grams = NULL, stems = NULL")
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
        assert _found(store, "メモ") == []
        store.reindex()
        assert conn.execute("SELECT grams FROM memories").fetchone()[0] is not None
        assert _found(store, "メモ") == [memo]


def test_the_index_of_a_new_store_has_the_grams_column(tmp_path: Path) -> None:
    with MemoryStore.open(tmp_path / "store.db", author=AUTHOR, clock=lambda: NOW) as store:
        columns = [row[1] for row in store.connection.execute("PRAGMA table_info(memories_fts)")]
        assert columns == ["content", "keywords", "grams"]


def test_an_older_version_is_found_by_a_word_inside_its_run(tmp_path: Path) -> None:
    """``include_history``: the history index holds the grams of replaced versions,
    after the writer and after a rebuild."""
    with MemoryStore.open(tmp_path / "store.db", author=AUTHOR, clock=lambda: NOW) as store:
        first = store.remember("退款需要财务审批后才能处理", project="app").memory
        conn = store.connection
        newer = first.record.evolve(
            content="the refund flow needs a second approval",
            hlc=Hlc(first.record.hlc.wall + 1, 0),
        )
        with transaction(conn):
            write_version(
                conn, newer, provenance=Provenance.local(), local_importance=0.5,
                seen_count=1, updated_at=NOW + 1,
            )  # fmt: skip
        for _ in range(2):
            assert _found(store, "审批") == []
            hits = store.recall("审批", k=5, project="app", include_history=True)
            assert [(hit.memory.id, "history" in hit.why) for hit in hits] == [(first.id, True)]
            store.reindex()


def test_a_store_of_version_10_finds_korean_words_and_one_character_after_the_migration(
    tmp_path: Path,
) -> None:
    """Rows written with the grams of before (no Hangul bigrams, no run's last
    character): after migration 11 ``서버를`` finds ``서버가 ...`` and ``猫`` the run it ends."""
    path = tmp_path / "store.db"
    conn = connect(path, now_ms=NOW, migrations=MIGRATIONS[:9], journaled=False)
    conn.close()
    with MemoryStore.open(path, author=AUTHOR, clock=lambda: NOW) as store:
        korean = store.remember("서버가 새벽에 다운됐다", project="app").memory.id
        cat = store.remember("我养了黑猫", project="app").memory.id
        store.remember("plain ascii words", project="app")
        conn = store.connection
        old = {
            korean: (None, "다운됐다 새벽에 서버가"),
            cat: ("我养 养了 了黑 黑猫", "了黑 我养 我养了黑猫 养了 黑猫"),
        }
        for mid, (grams, stems) in old.items():
            conn.execute(
                "UPDATE memories SET grams = ?, stems = ? WHERE id = ?", (grams, stems, mid)
            )
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
        conn.execute("DELETE FROM schema_migrations WHERE version > 10")
        assert (_found(store, "서버를"), _found(store, "猫")) == ([], [])
    with MemoryStore.open(path, author=AUTHOR, clock=lambda: NOW) as store:
        (version,) = store.connection.execute(
            "SELECT max(version) FROM schema_migrations"
        ).fetchone()
        assert version == latest_version()
        assert _found(store, "서버를") == [korean]
        assert _found(store, "猫") == [cat]
        checks = {check.name: check.ok for check in store.doctor()}
        assert (checks["fts"], checks["schema"]) == (True, True)


def test_a_read_only_open_reads_a_store_lacking_only_the_grams_refill(tmp_path: Path) -> None:
    """A read (``recall``, ``list``, ``show``) of a store of version 10 is answered from the
    store as it is (migration 11 only refills grams); one lacking a schema step (10) is
    still refused, naming the write command that migrates it."""
    path = tmp_path / "store.db"
    with MemoryStore.open(path, author=AUTHOR, clock=lambda: NOW) as store:
        mid = store.remember("the billing service listens on 8080", project="app").memory.id
        store.connection.execute("DELETE FROM schema_migrations WHERE version > 10")
    with MemoryStore.open(path, author=AUTHOR, readonly=True, clock=lambda: NOW) as store:
        assert [h.memory.id for h in store.recall("billing", k=3, project="app")] == [mid]
    conn = sqlite3.connect(path)
    with conn:
        (version,) = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        assert version == 10  # the read migrated nothing
        conn.execute("DELETE FROM schema_migrations WHERE version > 9")
    conn.close()
    with pytest.raises(MigrationNeededError, match=r"needs migration 10.*'sealmem init'"):
        MemoryStore.open(path, author=AUTHOR, readonly=True, clock=lambda: NOW)


def test_a_store_of_version_11_finds_text_stored_decomposed_after_the_migration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows written with the grams of before NFC (Korean as its jamo, kana with a
    separate voiced mark, a CJK compatibility ideograph as Korean hanja often is): the
    query's grams are of the composed letters now, so the row matched no query until
    migration 12 gave it its grams again."""
    path = tmp_path / "store.db"
    texts = {
        "korean": unicodedata.normalize("NFD", "서버가 새벽에 다운됐다"),
        "kana": unicodedata.normalize("NFD", "デプロイは金曜日にしない"),
        "hanja": "\uf914園에 갔다",  # 樂 U+F914 (NFC: U+6A02)
    }
    asked = {"korean": "서버", "kana": "デプロイ", "hanja": "\uf914園"}
    with MemoryStore.open(path, author=AUTHOR, clock=lambda: NOW) as store:
        ids = {name: store.remember(text, project="app").memory.id for name, text in texts.items()}
        store.remember("plain ascii words", project="app")
        conn = store.connection
        with monkeypatch.context() as before:  # the grams of the text as it was typed
            before.setattr(scripts.unicodedata, "is_normalized", lambda form, text: True)
            old = {name: scripts.grams(text) for name, text in texts.items()}
        for name, grams in old.items():
            conn.execute("UPDATE memories SET grams = ? WHERE id = ?", (grams, ids[name]))
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
        conn.execute("DELETE FROM schema_migrations WHERE version > 11")
        # the kana row is found by one bigram left alike (ロイ), the others by none
        assert (_found(store, asked["korean"]), _found(store, asked["hanja"])) == ([], [])
    with MemoryStore.open(path, author=AUTHOR, clock=lambda: NOW) as store:
        assert {name: _found(store, asked[name]) for name in texts} == {
            name: [mid] for name, mid in ids.items()
        }
        (version,) = store.connection.execute(
            "SELECT max(version) FROM schema_migrations"
        ).fetchone()
        assert version == latest_version() > 11
        checks = {check.name: check.ok for check in store.doctor()}
        assert (checks["fts"], checks["schema"]) == (True, True)
