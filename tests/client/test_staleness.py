"""Staleness (:mod:`sealmem.client.store.freshness`) on a real store with an injected
clock: a memory no one confirms or recalls for the review period is stale in recall and
in the review list; a recall, a repeat, a keep or a correction confirms it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.client.recall.api import MemoryStore
from sealmem.protocol.errors import InputError

DAY = 86_400_000
T0 = 1_760_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> MemoryStore:
    return MemoryStore.open(tmp_path / "store.db", author="alice", clock=clock)


def _stale(store: MemoryStore) -> list[str]:
    return [m.id for m, _ in store.stale(project="webapp")]


def test_a_memory_no_one_confirms_turns_stale_after_the_period(
    store: MemoryStore, clock: Clock
) -> None:
    orders = store.remember("Orders live in PostgreSQL 16 on the db host", project="webapp")
    clock.now += DAY
    deploys = store.remember("Deploys run from the release workflow", project="webapp")
    clock.now = T0 + 180 * DAY
    assert store.recall("orders PostgreSQL", project="webapp")[0].stale is False
    assert _stale(store) == []
    clock.now = T0 + 182 * DAY
    [hit] = store.recall("orders PostgreSQL", project="webapp", k=1)
    assert (hit.memory.id, hit.stale) == (orders.memory.id, True)
    assert hit.to_dict()["stale"] is True
    assert _stale(store) == [orders.memory.id, deploys.memory.id]  # oldest first
    store.close()


def test_a_recall_a_repeat_a_keep_and_a_correction_confirm_it(
    store: MemoryStore, clock: Clock
) -> None:
    recalled = store.remember("Orders live in PostgreSQL 16 on the db host", project="webapp")
    repeated = store.remember("Deploys run from the release workflow", project="webapp")
    kept = store.remember("The API listens on port 8443 behind nginx", project="webapp")
    wrong = store.remember("Logs are kept for 7 days in Loki", project="webapp")
    untouched = store.remember("Backups are taken every 6 hours", project="webapp")
    clock.now = T0 + 100 * DAY
    assert store.note_recalled([recalled.memory.id]) == 1
    assert store.note_recalled([recalled.memory.id]) == 0  # at most one write a day
    assert store.remember("Deploys run from the release workflow", project="webapp").merged
    clock.now = T0 + 200 * DAY
    assert set(_stale(store)) == {kept.memory.id, wrong.memory.id, untouched.memory.id}
    store.keep(kept.memory.id[-12:])
    fixed = store.remember("Logs are kept for 30 days in Loki", project="webapp",
                           supersedes=[wrong.memory.id])  # fmt: skip
    assert _stale(store) == [untouched.memory.id]
    hits = {h.memory.id: h.stale for h in store.recall("Loki logs days", project="webapp")}
    assert hits[fixed.memory.id] is False
    clock.now = T0 + 281 * DAY  # 181 days after the recall and the repeat
    assert set(_stale(store)) == {recalled.memory.id, repeated.memory.id, untouched.memory.id}
    assert repeated.memory.id in _stale(store)
    store.close()


def test_the_review_period_is_a_setting_refused_out_of_range(
    store: MemoryStore, clock: Clock
) -> None:
    memory = store.remember("Backups are taken every 6 hours", project="webapp")
    assert store.review_period() == 180
    assert store.set_review_period(30) == 30
    clock.now = T0 + 31 * DAY
    assert _stale(store) == [memory.memory.id]
    for bad in (0, -1, 3651):
        with pytest.raises(InputError, match="not a number of days from 1 to 3650"):
            store.set_review_period(bad)
    assert store.review_period() == 30
    store.forget(memory.memory.id, reason="no backups any more")
    assert _stale(store) == []  # a tombstone is never stale
    store.close()


def test_a_teammates_proposed_delete_leaves_the_authors_old_version_stale(
    store: MemoryStore, clock: Clock
) -> None:
    """Recall shows the author's version beside a teammate's tombstone (a proposal): no
    one confirmed that version, so it is stale as a live one would be."""
    from dataclasses import replace

    from sealmem.client.store.connection import transaction
    from sealmem.client.store.memory import Provenance
    from sealmem.client.store.writer import write_version
    from sealmem.protocol.hlc import Hlc

    mine = store.remember("Never deploy on Fridays: nobody is on call", project="webapp")
    rec = mine.memory.record
    gone = replace(
        rec, content="", keywords=(), editor="b" * 26, hlc=Hlc(rec.hlc.wall + 1000, 0),
        deleted=True, delete_reason="obsolete",
    )  # fmt: skip
    with transaction(store.connection) as conn:
        write_version(
            conn, gone.validate(), provenance=Provenance("folder", "b" * 26, "bob", True, T0, 1),
            local_importance=0.5, seen_count=0, updated_at=T0 + 2000,
        )  # fmt: skip
    clock.now = T0 + 182 * DAY
    [hit] = store.recall("deploy on Fridays", project="webapp")
    assert (hit.memory.id, hit.stale) == (rec.id, True)
    store.close()


def test_the_agent_sees_which_near_duplicate_is_stale(tmp_path: Path, clock: Clock) -> None:
    """MCP ``recall`` groups near-duplicates; each duplicate says whether it is stale (and
    related), as the leader does and as ``recall --json`` does."""
    import asyncio

    from sealmem.client.mcp.tools import MemoryTools

    with MemoryStore.open(tmp_path / "store.db", author="alice", clock=clock) as store:
        old = store.remember(
            "Redis 7 holds the session cookies; flushing it logs everyone out", project="webapp"
        )
        clock.now = T0 + 200 * DAY
        new = store.remember(
            "Session cookies live in Redis 7, so a flush of Redis logs every user out",
            project="webapp",
        )
    tools = MemoryTools(
        lambda: MemoryStore.open(tmp_path / "store.db", author="alice", clock=clock), "webapp"
    )
    try:
        result = asyncio.run(tools.recall("redis session cookies", project="webapp"))
    finally:
        tools.close()
    [lesson] = result.hits
    assert (lesson.id, lesson.stale) == (new.memory.id, False)
    [dup] = lesson.duplicates
    assert dup.id == old.memory.id
    assert dup.model_dump()["stale"] is True
    assert dup.model_dump()["related"] is False
