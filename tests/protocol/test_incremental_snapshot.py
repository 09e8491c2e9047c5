"""Incremental push: rebuilding only the dirty buckets gives the snapshot a full build gives.

``plan_rebuild`` (protocol/push.py) decides which buckets a push builds again; a
``build_snapshot`` given ``only=`` reads the records of those buckets alone and
keeps every other chunk.  Over random write sequences (new memories, edits,
tombstones, memories leaving the writer's set), the partial build is byte for
byte the full build with the same nonces: the same manifest, digests and chunks.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.crypto import SUITE
from sealmem.protocol.errors import InputError
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.manifest import ChunkRef, Manifest
from sealmem.protocol.push import Landed, PushPlan, plan_rebuild
from sealmem.protocol.record import Record
from sealmem.protocol.snapshot import (
    BUCKET_KEYS,
    MAX_SNAPSHOT_BUCKETS,
    PreviousSnapshot,
    Rebuild,
    Snapshot,
    bucket_key,
    bucket_of,
    build_snapshot,
)

from .team_world import NOW, Counter, World, make_record

WORLD = World()


def _build(records: Iterable[Record], previous: PreviousSnapshot | None, only: Rebuild | None,
           *, seq: int, epoch: int) -> Snapshot:  # fmt: skip
    return build_snapshot(
        SUITE, WORLD.key1 if epoch == 1 else WORLD.key2, WORLD.alice, team="acme-team",
        project="webapp", epoch=epoch, roster_version=1, seq=seq, prev=None,
        records=records, random=Counter(1000 * seq), created_at=NOW, previous=previous,
        only=only,
    )  # fmt: skip


def test_bucket_key_gives_the_bucket_of_every_bucket_count() -> None:
    for i in range(200):
        rid = make_record(WORLD.alice, i).id
        key = bucket_key(SUITE, rid)
        assert 0 <= key < BUCKET_KEYS
        buckets = 64
        while buckets <= MAX_SNAPSHOT_BUCKETS:
            assert key % buckets == bucket_of(SUITE, rid, buckets)
            buckets *= 2


# One step of a write sequence: (what, which memory).  "new" adds a memory, "edit" writes
# a newer version, "forget" a tombstone, "leave" takes it out of the writer's set (a
# teammate's version won, or a revocation drop).
steps = st.lists(
    st.tuples(st.sampled_from(["new", "edit", "forget", "leave"]), st.integers(0, 10_000)),
    max_size=12,
)


@settings(max_examples=25, deadline=None)
@given(st.integers(20, 100), steps, steps)
def test_a_partial_rebuild_equals_the_full_build(start: int, first: list, second: list) -> None:
    mine = {r.id: r for r in (make_record(WORLD.alice, i) for i in range(start))}
    serial = [start]
    wall = [NOW + 100_000]

    def apply(sequence: list[tuple[str, int]]) -> set[str]:
        touched: set[str] = set()
        for what, pick in sequence:
            wall[0] += 1
            if what == "new" or not mine:
                serial[0] += 1
                rec = make_record(WORLD.alice, serial[0])
                mine[rec.id] = rec
                touched.add(rec.id)
                continue
            rid = sorted(mine)[pick % len(mine)]
            touched.add(rid)
            if what == "leave":
                del mine[rid]
            elif what == "edit":
                mine[rid] = mine[rid].evolve(
                    content=f"edit {wall[0]}", deleted=False, hlc=Hlc(wall[0], 0)
                )
            else:
                mine[rid] = mine[rid].evolve(content="", deleted=True, hlc=Hlc(wall[0], 0))
        return touched

    base = _build(list(mine.values()), None, None, seq=1, epoch=1)
    previous = PreviousSnapshot(base.manifest, base.digests)
    for seq, sequence in ((2, first), (3, second)):
        touched = apply(sequence)
        plan = PushPlan(None, seq, "prev", None, previous.manifest)
        rebuild = plan_rebuild(
            plan, epoch=1, published=len(mine), digests=previous.digests,
            dirty={bucket_key(SUITE, rid) for rid in touched},
        )  # fmt: skip
        full = _build(list(mine.values()), previous, None, seq=seq, epoch=1)
        if rebuild is None:  # the bucket count changed: everything is built again
            assert full.manifest.buckets != previous.manifest.buckets
            partial = full
        else:
            some = [
                r
                for r in mine.values()
                if bucket_of(SUITE, r.id, rebuild.buckets_total) in rebuild.buckets
            ]
            partial = _build(some, previous, rebuild, seq=seq, epoch=1)
            assert len(rebuild.buckets) <= len(touched)
        assert partial.envelope == full.envelope
        assert dict(partial.digests) == dict(full.digests)
        assert dict(partial.new_chunks) == dict(full.new_chunks)
        previous = PreviousSnapshot(full.manifest, full.digests)


def _base(buckets: int = 64, epoch: int = 1) -> Manifest:
    chunks = (ChunkRef(3, "a" * 64, 100), ChunkRef(9, "b" * 64, 100))
    return Manifest("acme-team", "webapp", WORLD.alice.kid, 4, "p", epoch, 1, buckets, chunks, 100)


DIGESTS = {3: "d3", 9: "d9"}


@pytest.mark.parametrize(
    ("plan", "epoch", "published", "digests", "dirty", "lost", "expected"),
    [
        (PushPlan(None, 5, "h", None, _base()), 1, 100, DIGESTS, {64 + 5, 7}, (), {5, 7}),
        (PushPlan(None, 5, "h", None, _base()), 1, 100, DIGESTS, (), (9,), {9}),
        (PushPlan(None, 5, "h", None, _base()), 1, 100, {3: "d3"}, {1}, (), {1, 9}),
        (PushPlan(None, 1, None, None, None), 1, 100, {}, {1}, (), None),  # no base
        (PushPlan(None, 5, "h", None, _base(), force=True), 1, 100, DIGESTS, (), (), None),
        (PushPlan(None, 5, "h", None, _base(epoch=1)), 2, 100, DIGESTS, (), (), None),
        (PushPlan(None, 5, "h", None, _base(buckets=64)), 1, 64 * 64 * 8, DIGESTS, (), (), None),
    ],
    ids=[
        "dirty-keys",
        "lost-chunk",
        "unknown-digest",
        "no-base",
        "reset",
        "new-epoch",
        "new-bucket-count",
    ],
)
def test_plan_rebuild_table(
    plan: PushPlan,
    epoch: int,
    published: int,
    digests: dict[int, str],
    dirty: Iterable[int],
    lost: tuple[int, ...],
    expected: set[int] | None,
) -> None:
    got = plan_rebuild(
        plan, epoch=epoch, published=published, digests=digests, dirty=dirty, lost=lost
    )
    if expected is None:
        assert got is None
    else:
        assert got == Rebuild(frozenset(expected), 64, published)


def test_an_adopted_manifest_is_built_again_in_full() -> None:
    plan = PushPlan(None, 5, "h", Landed(_base(), "h"), _base())
    assert plan_rebuild(plan, epoch=1, published=100, digests=DIGESTS, dirty=()) is None


def test_a_partial_build_refuses_records_of_other_buckets() -> None:
    records = [make_record(WORLD.alice, i) for i in range(50)]
    base = _build(records, None, None, seq=1, epoch=1)
    previous = PreviousSnapshot(base.manifest, base.digests)
    one = bucket_of(SUITE, records[0].id, 64)
    with pytest.raises(InputError, match="rebuilt buckets only"):
        _build(records, previous, Rebuild(frozenset({one}), 64, 50), seq=2, epoch=1)
    with pytest.raises(InputError, match="previous snapshot"):
        _build(records[:1], None, Rebuild(frozenset({one}), 64, 50), seq=2, epoch=1)
