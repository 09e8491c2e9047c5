"""Merge laws (DESIGN §3): convergence, idempotence, importance floors, tombstone grace."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.protocol.errors import InputError
from sealmem.protocol.hlc import ZERO, Hlc
from sealmem.protocol.merge import (
    DEFAULT_GRACE_MS,
    SKIP_OTHER_PROJECT,
    collect_tombstones,
    effective_importance,
    merge,
    merge_many,
    version_key,
    wins,
)
from sealmem.protocol.record import Record
from tests.support.versions import IDS, version_lists, versions

NOW = 1_800_000_000_000

settings.register_profile("sealmem-merge", max_examples=60, deadline=None)
settings.load_profile("sealmem-merge")


def wire(state: Mapping[str, Record]) -> dict[str, object]:
    return {k: v.to_wire() for k, v in state.items()}


def apply(state: Mapping[str, Record], batch: Iterable[Record]) -> dict[str, Record]:
    return merge_many(state, batch, now_ms=NOW, clock=ZERO).winners


def oracle(all_versions: list[Record]) -> dict[str, Record]:
    best: dict[str, Record] = {}
    for v in all_versions:
        if v.id not in best or version_key(v) > version_key(best[v.id]):
            best[v.id] = v
    return best


@pytest.mark.slow
@given(version_lists, st.randoms(use_true_random=False))
def test_any_order_gives_the_greatest_version_per_id(vs: list[Record], rnd: object) -> None:
    shuffled = list(vs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert wire(apply({}, vs)) == wire(apply({}, shuffled)) == wire(oracle(vs))


@pytest.mark.slow
@given(version_lists, st.lists(st.integers(0, 24), max_size=4))
def test_any_grouping_converges(vs: list[Record], cuts: list[int]) -> None:
    bounds = [0, *sorted(c % (len(vs) + 1) for c in cuts), len(vs)]
    batches = [vs[a:b] for a, b in itertools.pairwise(bounds)]
    # one replica pulls batch after batch
    sequential: dict[str, Record] = {}
    for batch in batches:
        sequential = apply(sequential, batch)
    # each batch goes to its own replica; the replicas then sync pairwise, right to left
    replicas = [apply({}, batch) for batch in batches]
    folded: dict[str, Record] = {}
    for replica in reversed(replicas):
        folded = apply(replica, folded.values())
    assert wire(sequential) == wire(folded) == wire(apply({}, vs))


@pytest.mark.slow
@given(version_lists, version_lists)
def test_merging_twice_changes_nothing(base: list[Record], vs: list[Record]) -> None:
    state = apply({}, base)
    once = merge_many(state, vs, now_ms=NOW, clock=ZERO)
    twice = merge_many(once.winners, vs, now_ms=NOW, clock=once.clock, floors=once.floors)
    assert twice.changed == ()
    assert wire(twice.winners) == wire(once.winners)
    assert twice.floors == once.floors


@pytest.mark.slow
@given(versions(), versions(), versions())
def test_join_is_commutative_associative_idempotent(a: Record, b: Record, c: Record) -> None:
    def join(x: Record, y: Record) -> Record:
        if x.id != y.id:
            y = y.evolve(id=x.id, supersedes=())
        outcome = merge(x, y)
        assert outcome.winner is not None
        return outcome.winner

    b = b.evolve(id=a.id, supersedes=())
    c = c.evolve(id=a.id, supersedes=())
    assert join(a, b).to_wire() == join(b, a).to_wire()
    assert join(join(a, b), c).to_wire() == join(a, join(b, c)).to_wire()
    assert join(a, a) == a


@pytest.mark.slow
@given(version_lists, version_lists, st.dictionaries(st.sampled_from(IDS), st.integers(0, 1000)))
def test_a_pull_never_lowers_local_effective_importance(
    local: list[Record], pulled: list[Record], raw_floors: dict[str, int]
) -> None:
    state = apply({}, local)
    floors = {
        k: v / 1000 for k, v in raw_floors.items() if k in state and v / 1000 > state[k].importance
    }
    result = merge_many(state, pulled, now_ms=NOW, clock=ZERO, floors=floors)
    for rid, before in state.items():
        after = result.winners[rid]
        assert effective_importance(after, result.floors.get(rid)) >= effective_importance(
            before, floors.get(rid)
        )
    for rid, floor in result.floors.items():  # floors are kept only while they matter
        assert floor > result.winners[rid].importance


def test_a_pull_that_lowers_importance_keeps_the_local_value_as_floor() -> None:
    mine = _record(IDS[0], "alice", Hlc(10, 0), importance=0.9)
    theirs = mine.evolve(editor="bob", hlc=Hlc(11, 0), importance=0.2, content="fixed")
    outcome = merge(mine, theirs)
    assert outcome.winner == theirs
    assert outcome.changed
    assert outcome.loser == mine
    assert outcome.floor == pytest.approx(0.9)
    assert effective_importance(theirs, outcome.floor) == pytest.approx(0.9)
    # a later, more important pull makes the floor redundant, so it is dropped
    later = theirs.evolve(hlc=Hlc(12, 0), importance=0.95)
    assert merge(theirs, later, floor=outcome.floor).floor is None


def test_an_older_version_loses_and_is_reported_as_loser() -> None:
    current = _record(IDS[0], "alice", Hlc(10, 3))
    stale = current.evolve(hlc=Hlc(10, 2), content="old text")
    outcome = merge(current, stale, floor=0.7)
    assert outcome.winner is current
    assert not outcome.changed
    assert outcome.loser is stale
    assert outcome.floor == 0.7
    assert merge(current, current).loser is None


def test_editor_breaks_clock_ties_and_bytes_break_full_ties() -> None:
    a = _record(IDS[0], "alice", Hlc(5, 0))
    b = a.evolve(editor="bob")
    assert wins(b, a)
    assert not wins(a, b)
    twin = a.evolve(content="same clock, same editor, other text")
    assert wins(twin, a) != wins(a, twin)


def test_a_tombstone_wins_like_any_version() -> None:
    live = _record(IDS[0], "alice", Hlc(5, 0))
    tomb = live.evolve(hlc=Hlc(6, 0), content="", deleted=True, delete_reason="wrong")
    assert apply({}, [tomb, live])[IDS[0]] == tomb
    newer_live = live.evolve(hlc=Hlc(7, 0), editor="bob")
    assert apply({IDS[0]: tomb}, [newer_live])[IDS[0]] == newer_live


def test_an_id_held_in_another_project_is_skipped_with_a_reason() -> None:
    mine = _record(IDS[0], "alice", Hlc(5, 0))
    foreign = mine.evolve(project="other", hlc=Hlc(9, 0), editor="bob")
    result = merge_many({IDS[0]: mine}, [foreign], now_ms=NOW, clock=Hlc(3, 0))
    assert result.winners == {IDS[0]: mine}
    assert result.changed == ()
    assert [s.reason for s in result.skipped] == [SKIP_OTHER_PROJECT]
    assert "'other'" in result.skipped[0].detail
    assert "'proj'" in result.skipped[0].detail
    assert result.clock == Hlc(3, 0)  # a skipped version does not move the clock


def test_merge_refuses_versions_of_different_ids() -> None:
    with pytest.raises(InputError, match="look the local winner up"):
        merge(_record(IDS[0], "alice", Hlc(1, 0)), _record(IDS[1], "alice", Hlc(2, 0)))


@pytest.mark.slow
@given(version_lists, st.integers(0, 10**6))
def test_the_clock_passes_every_merged_version(vs: list[Record], start: int) -> None:
    before = Hlc(start, 0)
    result = merge_many({}, vs, now_ms=7, clock=before)
    assert result.clock >= before
    for v in vs:
        assert result.clock > v.hlc


@pytest.mark.slow
@given(
    st.lists(versions(), max_size=12),
    st.integers(0, 10),
    st.integers(0, 10),
)
def test_tombstones_are_collected_only_after_the_grace_period(
    vs: list[Record], now: int, grace: int
) -> None:
    state = apply({}, vs)
    kept = collect_tombstones(state, now, grace)
    for rid, record in state.items():
        expired = record.deleted and now - record.hlc.wall >= grace
        assert (rid in kept) != expired
        assert kept.get(rid, record) is record


def test_default_grace_is_180_days() -> None:
    tomb = _record(IDS[0], "alice", Hlc(NOW, 0)).evolve(content="", deleted=True)
    day = 24 * 3600 * 1000
    assert collect_tombstones({IDS[0]: tomb}, NOW + 179 * day) == {IDS[0]: tomb}
    assert collect_tombstones({IDS[0]: tomb}, NOW + 180 * day) == {}
    assert day * 180 == DEFAULT_GRACE_MS
    with pytest.raises(InputError, match="negative"):
        collect_tombstones({}, NOW, -1)


def _record(rid: str, editor: str, hlc: Hlc, *, importance: float = 0.5) -> Record:
    return Record(
        id=rid,
        project="proj",
        kind="note",
        content="pin uv to 0.4",
        keywords=("uv",),
        importance=importance,
        author=editor,
        editor=editor,
        created_at=1_700_000_000_000,
        hlc=hlc,
    ).validate()
