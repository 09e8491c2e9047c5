"""A secret split across keywords is redacted: the rules also read the keywords together.

Each keyword alone holds nothing (``password=`` names no value, ``hunter2x`` is a plain
token); read in order, they are a password assignment.  Pulled or imported, such a
version is stored without the secret.
"""

from __future__ import annotations

from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.redacting import redact_version
from sealmem.client.sync.apply import apply_versions
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id

from .conftest import START_MS

NOW = START_MS + 10_000


def record(*keywords: str) -> Record:
    return Record(
        id=new_memory_id(START_MS, bytes(10)),
        project="webapp",
        kind="note",
        content="how the staging database is reached",
        keywords=keywords,
        importance=0.5,
        author="alice",
        editor="alice",
        created_at=START_MS,
        hlc=Hlc(NOW - 5_000, 0),
    ).validate()


def test_a_password_split_over_two_keywords_is_redacted() -> None:
    cleaned, found = redact_version(record("db", "password=", "hunter2x", "ops"))
    assert found == {"password": 1}
    assert cleaned.keywords == ("db", "password=", "[REDACTED:password]", "ops")
    cleaned.validate()


def test_a_secret_over_several_keywords_counts_once_and_leaves_no_part() -> None:
    cleaned, found = redact_version(record("api_key:", "'x9Kf2LmQ", "7pRt4VwZ'"))
    assert sum(found.values()) == 1
    joined = " ".join(cleaned.keywords)
    assert "x9Kf2LmQ" not in joined
    assert "7pRt4VwZ" not in joined
    cleaned.validate()


def test_plain_keywords_are_kept() -> None:
    incoming = record("deploy", "token", "cache", "password", "reset")
    cleaned, found = redact_version(incoming)
    assert found == {}
    assert cleaned is incoming


def test_a_pulled_version_is_stored_without_the_split_secret(store: MemoryStore) -> None:
    pulled = record("password=", "hunter2x")
    provenance = Provenance("folder", "alice", "alice", True, NOW, 1)
    with transaction(store.connection):
        result = apply_versions(store.connection, [pulled], provenance, NOW)
    assert result.redacted == 1
    assert "hunter2x" not in store.get(pulled.id).record.keywords
