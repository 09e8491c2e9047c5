"""Import bounds clocks like a pull does, and decides winners with the protocol merge."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client import MemoryStore
from sealmem.protocol.hlc import MAX_AHEAD_MS, MAX_WALL_MS, Hlc
from sealmem.protocol.merge import merge_many
from sealmem.protocol.record import Record

from .conftest import FakeClock, OpenStore


def _store_clock(store: MemoryStore) -> int:
    (value,) = store.connection.execute("SELECT value FROM meta WHERE key = 'hlc'").fetchone()
    return int(str(value).partition(":")[0])


def test_records_far_ahead_are_not_imported(
    store: MemoryStore, open_store: OpenStore, tmp_path: Path, clock: FakeClock
) -> None:
    kept = store.remember("a sane note").memory
    future = store.remember("a note from year 6429").memory
    store.remember("a sane note", keywords=["again"])  # one version in history
    doc = copy.deepcopy(store.export())
    for item in doc["memories"]:
        if item["record"]["id"] == future.id:
            item["record"]["hlc"] = [MAX_WALL_MS, 0]
    doc["history"][0]["record"]["hlc"] = [clock.now + MAX_AHEAD_MS + 10_000, 0]

    other = open_store(tmp_path / "other.db")
    result = other.import_(doc)
    assert result.added == 1
    assert result.skipped == 2
    assert any(
        "2 records dated more than 2 days ahead were not imported" in w and future.id in w
        for w in result.warnings
    ), result.warnings
    assert other.get(kept.id).content == "a sane note"
    assert other.connection.execute("SELECT COUNT(*) FROM history").fetchone()[0] == 0
    (count,) = other.connection.execute(
        "SELECT COUNT(*) FROM memories WHERE id = ?", (future.id,)
    ).fetchone()
    assert count == 0
    assert _store_clock(other) <= clock.now + MAX_AHEAD_MS
    assert other.remember("written after the import").memory.record.hlc.wall <= clock.now + 10


def test_the_edge_of_the_bound_is_imported(
    store: MemoryStore, open_store: OpenStore, tmp_path: Path, clock: FakeClock
) -> None:
    memory = store.remember("just inside the bound").memory
    doc = copy.deepcopy(store.export())
    doc["memories"][0]["record"]["hlc"] = [clock.now + MAX_AHEAD_MS, 0]
    other = open_store(tmp_path / "other.db")
    assert other.import_(doc).added == 1
    assert other.get(memory.id).record.hlc.wall >= clock.now


_walls = st.integers(min_value=1_767_225_600_000 - 10, max_value=1_767_225_600_000 + 10)


_versions = st.lists(
    st.tuples(_walls, st.integers(0, 3), st.sampled_from("abc")), min_size=1, max_size=6
)


@pytest.mark.slow
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(walls=_versions)
def test_import_winners_are_the_protocol_merge(
    open_store: OpenStore,
    tmp_path_factory: pytest.TempPathFactory,
    walls: list[tuple[int, int, str]],
) -> None:
    """Importing versions one document at a time keeps the winner ``merge_many`` keeps,
    ties on (wall, counter, editor) included (the canonical bytes break them)."""
    source = open_store(tmp_path_factory.mktemp("src") / "s.db")
    base = source.remember("one memory").memory
    target = open_store(tmp_path_factory.mktemp("dst") / "t.db")
    template = source.export()
    versions: list[Record] = []
    for i, (wall, counter, editor) in enumerate(walls):
        record = base.record.evolve(
            hlc=Hlc(wall, counter), editor=editor * 8, content=f"version {i % 2}"
        )
        versions.append(record)
        doc = copy.deepcopy(template)
        doc["memories"][0]["record"] = record.to_wire()
        target.import_(doc)
    expected = merge_many({}, versions, now_ms=wall, clock=Hlc(0, 0)).winners[base.id]
    assert target.get(base.id).record == expected
