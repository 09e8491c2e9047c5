"""The local write path redacts by the same rule as a pull or an import.

``remember`` (and ``share``, ``forget``'s reason) used to redact each text on its own
and leave it as long as the placeholders made it: a text the person typed within its
limit was then refused ("refused to store the memory: content is 25,013
characters"), and a secret split over two keywords was stored as it was.  Now the one
rule (:func:`sealmem.client.store.redact.redact_texts`) runs everywhere: the keywords
are also read together, and a text the placeholders push past its limit is cut to it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.protocol.record import MAX_CONTENT_CHARS, MAX_KEYWORD_CHARS, MAX_REASON_CHARS

from .conftest import OpenStore


def crowded(n: int) -> str:
    """``n`` characters of short password assignments, each below its placeholder's length."""
    return ("pw=abcd1 " * (n // 9 + 1))[:n].strip()


def test_a_remembered_text_the_placeholders_push_past_the_limit_is_stored_at_it(
    store: MemoryStore, open_store: OpenStore, home: Path
) -> None:
    text = crowded(MAX_CONTENT_CHARS)
    result = store.remember(text, keywords=["ops"])
    stored = result.memory.record
    assert MAX_CONTENT_CHARS - len("[REDACTED:password]") <= len(stored.content)
    assert len(stored.content) <= MAX_CONTENT_CHARS  # cut before a placeholder it would split
    assert stored.content.endswith("\u2026")
    assert "abcd1" not in stored.content
    assert stored.content.count("[REDACTED:") == stored.content.count("]")  # none split
    assert any("password" in w for w in result.warnings)
    stored.validate()
    # it travels: exported, imported into another store, byte for byte
    other = open_store(home / "other.db")
    assert other.import_(store.export()).added == 1
    assert other.get(stored.id).content == stored.content


def test_a_keyword_the_placeholder_pushes_past_its_limit_is_cut(store: MemoryStore) -> None:
    word = "k" * (MAX_KEYWORD_CHARS - len(" pw=abcd9")) + " pw=abcd9"
    assert len(word) == MAX_KEYWORD_CHARS
    stored = store.remember("where the staging password lives", keywords=[word]).memory.record
    (kept,) = stored.keywords
    assert len(kept) <= MAX_KEYWORD_CHARS
    assert "abcd9" not in kept
    stored.validate()


def test_a_secret_split_over_two_keywords_is_redacted(store: MemoryStore) -> None:
    result = store.remember(
        "how the staging database is reached", keywords=["db", "password=", "hunter2x"]
    )
    assert result.memory.record.keywords == ("db", "password=", "[REDACTED:password]")
    assert any("keywords" in w and "password" in w for w in result.warnings)
    assert "hunter2x" not in json.dumps(store.export())


def test_a_repeat_does_not_bring_a_split_secret_in(store: MemoryStore) -> None:
    first = store.remember("how the staging database is reached", keywords=["db"])
    again = store.remember(
        "how the staging database is reached", keywords=["api_key:", "'x9Kf2LmQ", "7pRt4VwZ'"]
    )
    assert again.memory.id == first.memory.id
    joined = " ".join(again.memory.record.keywords)
    assert "x9Kf2LmQ" not in joined
    assert "7pRt4VwZ" not in joined


def test_a_secret_split_between_an_old_and_a_new_keyword_is_redacted(store: MemoryStore) -> None:
    """A repeat adds its keywords to the memory's: the rule reads them together."""
    store.remember("how the staging database is reached", keywords=["db", "password="])
    again = store.remember("how the staging database is reached", keywords=["hunter2x"])
    assert again.memory.record.keywords == ("db", "password=", "[REDACTED:password]")
    assert any("keywords" in w and "password" in w for w in again.warnings)
    assert "hunter2x" not in json.dumps(store.export())


def test_a_forget_reason_the_placeholders_push_past_the_limit_is_cut(store: MemoryStore) -> None:
    memory = store.remember("a note to forget").memory
    reason = crowded(MAX_REASON_CHARS)
    tomb = store.forget(memory.id, reason=reason)
    assert tomb.record.delete_reason is not None
    assert len(tomb.record.delete_reason) <= MAX_REASON_CHARS
    assert "abcd1" not in tomb.record.delete_reason
    tomb.record.validate()


def test_plain_keywords_are_kept_as_given(store: MemoryStore) -> None:
    result = store.remember(
        "rotate the deploy token monthly", keywords=["deploy", "token", "password", "reset"]
    )
    assert result.memory.record.keywords == ("deploy", "token", "password", "reset")
    assert result.warnings == []


@pytest.mark.slow
def test_the_cli_remembers_a_text_at_the_limit(home: Path) -> None:
    """The CLI (and the MCP tool, over the same API) stores it instead of refusing it."""
    text = crowded(MAX_CONTENT_CHARS)
    run = subprocess.run(
        [sys.executable, "-m", "sealmem.client.cli", "remember", "--json", "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    content = json.loads(run.stdout)["memory"]["content"]
    assert MAX_CONTENT_CHARS - len("[REDACTED:password]") <= len(content) <= MAX_CONTENT_CHARS


def test_a_cut_that_falls_in_the_first_characters_of_a_placeholder_drops_it_whole(
    store: MemoryStore,
) -> None:
    """The placeholder starts a few characters before the cut, so that not even its
    ``[REDACTED:`` opening fits: the cut falls before it, never leaving ``[REDAC``.
    Multi-byte characters count as one each (the limits are in characters)."""
    for lead in range(MAX_CONTENT_CHARS - 18, MAX_CONTENT_CHARS - 8):
        text = "\u00e9" * lead + " pw=abcd1"
        assert len(text) <= MAX_CONTENT_CHARS
        stored = store.remember(text, keywords=["ops"]).memory.record
        assert "abcd1" not in stored.content
        assert "[REDACTED:password]" in stored.content or stored.content.endswith(" pw=\u2026"), (
            stored.content[-30:]
        )
        assert "[REDAC" not in stored.content.replace("[REDACTED:password]", "")
        assert len(stored.content) <= MAX_CONTENT_CHARS
        stored.validate()
