"""A pull merges the records of several chunks per batch, with the same outcome.

The finding: :func:`~sealmem.client.sync.pull.pull_project` merged each chunk on its
own (~40 versions a call in a 10k snapshot), paying the batch's statements (the row
read, the full-text fills, a full-text segment) per chunk.  Now the chunks of one
snapshot are merged ``MERGE_BATCH`` records at a time; what the reader holds is the
same as with one chunk per call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import pytest

from sealmem.client.store.memory import Provenance
from sealmem.client.sync import pull
from sealmem.client.sync.apply import ApplyResult, apply_versions
from sealmem.protocol.record import Record
from tests.sync.conftest import World

pytestmark = pytest.mark.slow


def _counting(calls: list[int]) -> object:
    def run(
        conn: object,
        records: Iterable[Record],
        prov: Provenance,
        now: int,
        bucket_keys: Mapping[str, int] | None = None,
    ) -> ApplyResult:
        batch = list(records)
        calls.append(len(batch))
        return apply_versions(conn, batch, prov, now, bucket_keys)  # type: ignore[arg-type]

    return run


def test_the_chunks_of_a_snapshot_are_merged_in_few_batches(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    for i in range(300):
        alice.remember(f"alice note {i} about the release train", keywords=[f"k{i % 7}"])
    alice.sync()
    calls: list[int] = []
    monkeypatch.setattr(pull, "apply_versions", _counting(calls))
    summary = bob.sync()
    assert summary.pulled_new == 300
    (cache,) = bob.store.connection.execute("SELECT chunks_json FROM chain_heads").fetchone()
    assert len(json.loads(cache)) >= 32  # many chunks (one per bucket) ...
    assert calls == [300]  # ... merged in one batch
    # the same outcome as one chunk per call
    monkeypatch.setattr(pull, "MERGE_BATCH", 1)
    calls.clear()
    assert carol.sync().pulled_new == 300
    assert len(calls) > 10
    assert bob.winners() == carol.winners()
    assert {m.id: m.record for m in bob.memories().values()} == {
        m.id: m.record for m in carol.memories().values()
    }


def test_a_large_snapshot_is_merged_a_bounded_batch_at_a_time(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    for i in range(250):
        alice.remember(f"alice note {i} about the build cache")
    alice.sync()
    calls: list[int] = []
    monkeypatch.setattr(pull, "apply_versions", _counting(calls))
    monkeypatch.setattr(pull, "MERGE_BATCH", 100)
    assert bob.sync().pulled_new == 250
    assert sum(calls) == 250
    assert len(calls) == 3  # 100+, 100+, the rest: whole chunks, never more than one over
    assert all(n < 100 + 20 for n in calls)
