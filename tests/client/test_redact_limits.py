"""A placeholder longer than the secret it replaces never makes a version invalid.

``pw=abcd1`` (8 characters) becomes ``pw=[REDACTED:password]`` (22): a pulled or
imported text near its size limit outgrows it once redacted.  Stored as it was, the
version was refused wherever it went next (an export imported elsewhere refused the
whole file).  Now the redacted text is cut to the limit, before any placeholder the
cut would split, and the version stays valid, with its secrets gone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.redacting import redact_version
from sealmem.client.sync.apply import apply_versions
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import (
    MAX_CONTENT_CHARS,
    MAX_KEYWORD_CHARS,
    MAX_REASON_CHARS,
    Record,
    new_memory_id,
)

from .conftest import START_MS

NOW = START_MS + 10_000
PULLED = Provenance("folder", "alice", "alice", True, NOW, 1)


def crowded(n: int) -> str:
    """``n`` characters of short password assignments, each below its placeholder's length."""
    return ("pw=abcd1 " * (n // 9 + 1))[:n]


def record(**fields: object) -> Record:
    base = Record(
        id=new_memory_id(START_MS, bytes(10)),
        project="webapp",
        kind="note",
        content="a note",
        keywords=("ops",),
        importance=0.5,
        author="alice",
        editor="alice",
        created_at=START_MS,
        hlc=Hlc(NOW - 5_000, 0),
    )
    return base.evolve(**fields).validate()


def test_redacted_text_is_cut_to_every_limit() -> None:
    incoming = record(
        content=crowded(MAX_CONTENT_CHARS - 3),
        keywords=("k" * 50 + " pw=abcd9",),
    )
    cleaned, found = redact_version(incoming)
    assert found["password"] > 1000
    cleaned.validate()  # before: content of 25,000+ characters, a 73-character keyword
    assert MAX_CONTENT_CHARS - len("[REDACTED:password]") <= len(cleaned.content)
    assert len(cleaned.content) <= MAX_CONTENT_CHARS
    assert cleaned.content.endswith("\u2026")
    assert "abcd1" not in cleaned.content
    assert cleaned.content.count("[REDACTED:") == cleaned.content.count("]")  # none split
    (word,) = cleaned.keywords
    assert len(word) <= MAX_KEYWORD_CHARS
    assert "abcd9" not in word
    tomb = record(content="", deleted=True, delete_reason=crowded(MAX_REASON_CHARS))
    cleaned_tomb, _ = redact_version(tomb)
    cleaned_tomb.validate()
    assert "abcd1" not in (cleaned_tomb.delete_reason or "")


def test_a_text_within_its_limit_is_not_cut() -> None:
    incoming = record(content=crowded(300))
    cleaned, _ = redact_version(incoming)
    assert not cleaned.content.endswith("\u2026")
    assert len(cleaned.content) > 300  # longer, still within the limit: kept whole


def test_a_pulled_version_near_the_limit_is_kept_and_travels_on(
    store: MemoryStore, open_store: Callable[..., MemoryStore], home: Path
) -> None:
    """Pulled, stored, exported, imported elsewhere: the version is neither refused nor lost."""
    incoming = record(content=crowded(MAX_CONTENT_CHARS))
    with transaction(store.connection):
        result = apply_versions(store.connection, [incoming], PULLED, NOW)
    assert (result.new, result.redacted) == (1, 1)
    stored = store.get(incoming.id)
    assert stored is not None
    assert len(stored.content) <= MAX_CONTENT_CHARS
    other = open_store(home / "other.db")
    assert other.import_(store.export()).added == 1
    moved = other.get(incoming.id)
    assert moved is not None
    assert moved.content == stored.content
