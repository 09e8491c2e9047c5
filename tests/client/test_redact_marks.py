"""Redaction is not repeated on text this store's rules already redacted (schema v9).

A pull or an import runs the rules over every version from outside, except one whose
text equals the marked text of its id in this store: a re-pull, a re-import, an
update that changes only metadata.  The skip rests on this store's own marks, never
on the incoming text: an unmarked row, a changed text or a rules change runs the
rules again.  The rules really run (the spy only counts calls).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store import redaction
from sealmem.client.store.connection import set_meta, transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.redaction import texts
from sealmem.client.store.writer import Batch, load_rows, write, write_version
from sealmem.client.sync.apply import apply_versions
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id

from .conftest import START_MS

NOW = START_MS + 10_000
PULLED = Provenance("folder", "alice", "alice", True, NOW, 1)
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def rule_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the redaction rules run over (the real rules run)."""
    seen: list[str] = []
    real, real_many = texts.redact, texts.redact_many

    def spy(text: str) -> redaction.Redacted:
        seen.append(text)
        return real(text)

    def spy_many(batch: Sequence[str]) -> dict[int, redaction.Redacted]:
        seen.extend(batch)
        return real_many(batch)

    monkeypatch.setattr(texts, "redact", spy)  # where every write path calls the rules
    monkeypatch.setattr(texts, "redact_many", spy_many)  # a batch's contents (a pull)
    return seen


def versions(n: int, *, wall: int, importance: float = 0.5, text: str = "note") -> list[Record]:
    return [
        Record(
            id=new_memory_id(START_MS + i, i.to_bytes(10, "big")),
            project="webapp",
            kind="note",
            content=f"{text} {i}: rotate the deploy token weekly",
            keywords=("deploy", f"k{i}"),
            importance=importance,
            author="alice",
            editor="alice",
            created_at=START_MS,
            hlc=Hlc(wall, i),
        )
        for i in range(n)
    ]


def pull(store: MemoryStore, records: list[Record]) -> int:
    with transaction(store.connection):
        return apply_versions(store.connection, records, PULLED, NOW).redacted


def contents(store: MemoryStore) -> dict[str, tuple[str, str]]:
    rows = store.connection.execute("SELECT id, content, keywords_json FROM memories")
    return {str(r[0]): (str(r[1]), str(r[2])) for r in rows}


def test_a_repull_and_a_metadata_update_do_not_run_the_rules(
    store: MemoryStore, rule_runs: list[str]
) -> None:
    first = versions(20, wall=NOW - 5_000)
    pull(store, first)
    assert any("rotate the deploy token" in text for text in rule_runs)
    rule_runs.clear()
    pull(store, first)  # a re-pull
    assert rule_runs == []
    reinforced = versions(20, wall=NOW - 4_000, importance=0.9)  # newer, same text
    pull(store, reinforced)
    assert rule_runs == []
    row = store.connection.execute(
        "SELECT importance, hlc_wall FROM memories WHERE id = ?", (first[0].id,)
    ).fetchone()
    assert (row[0], row[1]) == (0.9, NOW - 4_000)  # the update was merged


def test_changed_text_and_a_rules_change_run_the_rules_again(
    store: MemoryStore, rule_runs: list[str]
) -> None:
    pull(store, versions(5, wall=NOW - 5_000))
    edited = versions(5, wall=NOW - 4_000, text="edited")
    rule_runs.clear()
    pull(store, edited)
    assert sum("edited" in text for text in rule_runs) == 5
    rule_runs.clear()
    pull(store, edited)
    assert rule_runs == []
    with transaction(store.connection):
        set_meta(store.connection, "redaction_rules", "sealmem-2+gitleaks-8.0.0@000000000000")
    # the same text, newer (a reinforce): marks made under other rules are not trusted
    # (the very versions held, pulled again, are left out before any rule: the merge
    # keeps them as they are, whatever the rules)
    reinforced = versions(5, wall=NOW - 3_000, importance=0.7, text="edited")
    pull(store, reinforced)
    assert sum("edited" in text for text in rule_runs) == 5
    rule_runs.clear()
    pull(store, versions(5, wall=NOW - 2_000, importance=0.8, text="edited"))
    assert rule_runs == []


def test_text_equal_to_an_unmarked_row_is_redacted(store: MemoryStore) -> None:
    """Equality with what the store holds is not enough: the row must be one this
    store's rules wrote.  A row an older sealmem stored with a secret in it (no mark) is
    cleaned when the same text comes in again, newer."""
    leaky = versions(1, wall=NOW - 5_000, text=f"token {SECRET}")[0]
    with transaction(store.connection):
        write_version(
            store.connection,
            leaky,
            provenance=PULLED,
            local_importance=0.5,
            seen_count=1,
            updated_at=NOW,
        )
    again = leaky.evolve(hlc=Hlc(NOW - 4_000, 0), importance=0.7)
    assert pull(store, [again]) == 1
    content, _ = contents(store)[leaky.id]
    assert SECRET not in content
    assert "[REDACTED:github_token]" in content


def test_a_secret_is_redacted_on_every_pull_and_never_marked_as_clean(
    store: MemoryStore, rule_runs: list[str]
) -> None:
    """A teammate's version with a secret: its cleaned text is stored and marked; the
    same secret-laden version pulled again does not equal the stored text, so the rules
    run again and the store keeps the cleaned text."""
    leaky = versions(1, wall=NOW - 5_000, text=f"token {SECRET}")
    assert pull(store, leaky) == 1
    rule_runs.clear()
    assert pull(store, leaky) == 1
    assert rule_runs
    content, _ = contents(store)[leaky[0].id]
    assert SECRET not in content


def test_a_reimport_does_not_run_the_rules(
    store: MemoryStore, open_store: Callable[..., MemoryStore], rule_runs: list[str], home: Path
) -> None:
    for i in range(10):
        store.remember(f"memory {i}: the deploy token lives in the vault", keywords=["vault"])
    document = store.export()
    other = open_store(home / "other.db")
    rule_runs.clear()
    assert other.import_(document).added == 10
    assert sum("the deploy token lives" in text for text in rule_runs) == 10
    rule_runs.clear()
    again = other.import_(document)
    assert (again.added, again.updated) == (0, 0)
    assert rule_runs == []
    assert contents(other) == contents(store)


def test_forgetting_a_memory_leaves_no_mark_for_its_text(store: MemoryStore) -> None:
    """A mark names a version, never its text; a deleted row takes its mark with it."""
    records = versions(3, wall=NOW - 5_000)
    pull(store, records)
    marks = store.connection.execute("SELECT * FROM redaction_marks ORDER BY id").fetchall()
    assert [tuple(m) for m in marks] == [
        (r.id, r.hlc.wall, r.hlc.counter, r.editor) for r in sorted(records, key=lambda r: r.id)
    ]
    with transaction(store.connection):  # as dropping a revoked writer's last version does
        row = load_rows(store.connection, [records[0].id])[records[0].id]
        write(store.connection, Batch(removed=[row], replaced_at=NOW))
    left = store.connection.execute("SELECT id FROM redaction_marks").fetchall()
    assert sorted(str(m[0]) for m in left) == sorted(r.id for r in records[1:])


def test_an_update_that_keeps_the_text_keeps_its_index_entry(store: MemoryStore) -> None:
    """A metadata-only update (newer clock, higher importance, same text) rewrites the
    row but not its full-text entry: no segment of ``memories_fts`` is written."""
    pull(store, versions(30, wall=NOW - 5_000))
    traced: list[str] = []
    store.connection.set_trace_callback(traced.append)
    pull(store, versions(30, wall=NOW - 4_000, importance=0.9))
    store.connection.set_trace_callback(None)
    assert not [s for s in traced if "'memories_fts_data'" in s]
    hits = store.connection.execute(
        "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'rotate'"
    ).fetchone()[0]
    assert hits == 30
    store.connection.execute(
        "INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)"
    )
