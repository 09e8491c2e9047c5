"""The push planner (protocol/push.py): one table row per branch, and the seq laws."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.protocol.hlc import MAX_AHEAD_MS, ZERO, Hlc
from sealmem.protocol.manifest import ChunkRef, Manifest
from sealmem.protocol.push import (
    SKIP_EMPTY,
    SKIP_UNCHANGED,
    Landed,
    OwnHead,
    Publishable,
    PushPlan,
    plan_push,
    writable_projects,
)
from sealmem.protocol.roster import Grant, Revocation, Roster

NOW = 1_800_000_000_000
PUSHED = Hlc(NOW - 60_000, 3)
NEWER = Hlc(NOW - 1_000, 0)
CHUNKS = (ChunkRef(0, "a" * 64, 100), ChunkRef(5, "b" * 64, 200))
AS_PUSHED = Publishable(10, PUSHED, 0)  # what the default chain at seq 3 published


def manifest(
    seq: int, *, epoch: int = 1, records: int = 10, chunks: tuple[ChunkRef, ...] = CHUNKS
) -> Manifest:
    return Manifest(
        "team", "webapp", "alice", seq, None if seq == 1 else f"prev-{seq - 1}", epoch,
        roster_version=4, buckets=64, chunks=chunks, records=records,
    )  # fmt: skip


def own(seq: int = 3, *, epoch: int = 1, records: int = 10, count: int = 10,
        reset_at: int = 0) -> OwnHead:  # fmt: skip
    return OwnHead(manifest(seq, epoch=epoch, records=records), f"hash-{seq}", PUSHED, count,
                   reset_at)  # fmt: skip


def landed(seq: int) -> Landed:
    return Landed(manifest(seq), f"landed-{seq}")


@dataclass(frozen=True)
class Case:
    """Inputs (defaults: a chain at seq 3 with nothing changed) and the expected plan."""

    own: OwnHead | None = field(default_factory=own)
    landed: Landed | None = None
    epoch: int = 1
    reset_at: int = 0
    witnessed_seq: int = 0
    publishable: Publishable = AS_PUSHED
    now: int = NOW
    # expected
    skip: str | None = None
    seq: int = 0
    prev: str | None = None
    adopted: int | None = None
    base: int | None = None
    force: bool = False
    reset_recorded: int = 0
    warns: tuple[str, ...] = ()


CASES = {
    "unchanged-is-skipped": Case(skip=SKIP_UNCHANGED),
    "new-version-continues-the-chain": Case(
        publishable=Publishable(11, NEWER, 0), seq=4, prev="hash-3", base=3
    ),
    "edited-version-continues-the-chain": Case(
        publishable=Publishable(10, NEWER, 0), seq=4, prev="hash-3", base=3
    ),
    "a-version-lost-to-a-teammate-is-dropped": Case(
        publishable=Publishable(9, PUSHED, 0), seq=4, prev="hash-3", base=3
    ),
    "a-tombstone-past-grace-is-collected": Case(
        publishable=Publishable(10, PUSHED, 1), seq=4, prev="hash-3", base=3
    ),
    "tombstone-already-collected-is-unchanged": Case(
        own=own(records=9, count=10), publishable=Publishable(10, PUSHED, 1), skip=SKIP_UNCHANGED
    ),
    "epoch-change-forces-a-rebuild": Case(epoch=2, seq=4, prev="hash-3", base=3),
    "first-push-starts-a-chain-at-1": Case(own=None, publishable=Publishable(2, NEWER, 0), seq=1),
    "first-push-with-nothing-to-publish-is-skipped": Case(
        own=None, publishable=Publishable(0, ZERO, 0), skip=SKIP_EMPTY
    ),
    "first-push-with-only-collected-tombstones-is-skipped": Case(
        own=None, publishable=Publishable(2, PUSHED, 2), skip=SKIP_EMPTY
    ),
    "interrupted-push-is-adopted": Case(
        landed=landed(4), seq=5, prev="landed-4", adopted=4, base=4
    ),
    "interrupted-first-push-is-adopted-by-a-store-that-lost-its-record": Case(
        own=None,
        landed=landed(2),
        publishable=Publishable(1, NEWER, 0),
        seq=3,
        prev="landed-2",
        adopted=2,
        base=2,
    ),
    "own-manifest-not-newer-is-not-adopted": Case(landed=landed(3), skip=SKIP_UNCHANGED),
    "new-store-warns-and-avoids-the-witnessed-seq": Case(
        own=None,
        witnessed_seq=7,
        publishable=Publishable(1, NEWER, 0),
        seq=8,
        warns=("starts a new chain",),
    ),
    "continuing-chain-ignores-witnesses": Case(
        witnessed_seq=9, publishable=Publishable(11, NEWER, 0), seq=4, prev="hash-3", base=3
    ),
    "admin-reset-starts-a-new-chain-above-every-known-seq": Case(
        reset_at=6, witnessed_seq=5, seq=6, base=3, force=True, reset_recorded=6
    ),
    "admin-reset-above-an-adopted-manifest": Case(
        reset_at=6, landed=landed(8), seq=9, adopted=8, base=8, force=True, reset_recorded=6
    ),
    "answered-reset-is-not-replayed": Case(own=own(reset_at=6), reset_at=6, skip=SKIP_UNCHANGED),
    "answered-reset-is-kept-with-the-next-head": Case(
        own=own(reset_at=6),
        reset_at=6,
        publishable=Publishable(11, NEWER, 0),
        seq=4,
        prev="hash-3",
        base=3,
        reset_recorded=6,
    ),
    "new-store-after-a-reset-still-warns": Case(
        own=None,
        reset_at=6,
        witnessed_seq=4,
        publishable=Publishable(1, NEWER, 0),
        seq=5,
        reset_recorded=6,
        force=True,
        warns=("starts a new chain",),
    ),
    "version-too-far-ahead-warns-clock-ahead": Case(
        publishable=Publishable(11, Hlc(NOW + MAX_AHEAD_MS + 1, 0), 0),
        seq=4,
        prev="hash-3",
        base=3,
        warns=("clock-ahead",),
    ),
}


def plan_of(case: Case) -> PushPlan:
    return plan_push(
        project="webapp", own=case.own, landed=case.landed, epoch=case.epoch,
        reset_at=case.reset_at, witnessed_seq=case.witnessed_seq,
        publishable=case.publishable, now_ms=case.now,
    )  # fmt: skip


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_plan(case: Case) -> None:
    plan = plan_of(case)
    assert plan.skip == case.skip
    assert len(plan.warnings) == len(case.warns)
    for text, warning in zip(case.warns, plan.warnings, strict=True):
        assert text in warning
    if case.skip is not None:
        return
    assert (plan.seq, plan.prev) == (case.seq, case.prev)
    assert (None if plan.adopt is None else plan.adopt.manifest.seq) == case.adopted
    assert (None if plan.base is None else plan.base.seq) == case.base
    assert plan.force is case.force
    assert plan.reset_at == case.reset_recorded
    assert plan.pushed == (PUSHED if case.own is not None else ZERO)


def test_every_skip_reason_and_branch_has_a_row() -> None:
    plans = [plan_of(c) for c in CASES.values()]
    assert {p.skip for p in plans} == {None, SKIP_EMPTY, SKIP_UNCHANGED}
    assert any(p.adopt is not None for p in plans)
    assert any(p.force for p in plans)
    assert any(p.prev is None and p.skip is None for p in plans)


PUBLISHES = {
    "same-chunks-same-epoch-is-not-published": (own().manifest, False, manifest(4), False),
    "changed-chunk-is-published": (own().manifest, False, manifest(4, chunks=CHUNKS[:1]), True),
    "new-epoch-is-published": (own().manifest, False, manifest(4, epoch=2), True),
    "reset-is-published-even-unchanged": (own().manifest, True, manifest(4), True),
    "first-manifest-is-published": (None, False, manifest(1), True),
}


@pytest.mark.parametrize(("base", "force", "built", "expected"), PUBLISHES.values(),
                         ids=PUBLISHES.keys())  # fmt: skip
def test_publishes(base: Manifest | None, force: bool, built: Manifest, expected: bool) -> None:
    plan = PushPlan(None, 4, "hash-3", None, base, force=force)
    assert plan.publishes(built) is expected


settings.register_profile("sealmem-push", max_examples=200, deadline=None)


@pytest.mark.slow
@settings(settings.get_profile("sealmem-push"))
@given(
    own_seq=st.none() | st.integers(1, 20),
    own_reset=st.integers(0, 5),
    landed_seq=st.none() | st.integers(1, 25),
    reset_at=st.integers(0, 8),
    witnessed=st.integers(0, 30),
    count=st.integers(0, 12),
    due=st.integers(0, 3),
    newer=st.booleans(),
    epoch=st.integers(1, 2),
)
def test_a_planned_seq_is_above_every_seq_the_team_may_have_seen(
    own_seq: int | None, own_reset: int, landed_seq: int | None, reset_at: int,
    witnessed: int, count: int, due: int, newer: bool, epoch: int,
) -> None:  # fmt: skip
    head = None if own_seq is None else own(own_seq, reset_at=own_reset)
    plan = plan_push(
        project="webapp", own=head, landed=None if landed_seq is None else landed(landed_seq),
        epoch=epoch, reset_at=reset_at, witnessed_seq=witnessed,
        publishable=Publishable(count, NEWER if newer else PUSHED, min(due, count)), now_ms=NOW,
    )  # fmt: skip
    if plan.skip is not None:
        return
    assert plan.seq > (own_seq or 0)
    assert plan.seq > (landed_seq or 0)
    if plan.prev is None:  # a new chain: no seq a teammate witnessed is reused
        assert plan.seq > witnessed
    else:  # continuing: right after the head we continue
        assert plan.base is not None
        assert plan.seq == plan.base.seq + 1
    assert plan.reset_at >= (own_reset if head is not None else 0)


def roster(grants: tuple[Grant, ...], revoked: tuple[str, ...] = ()) -> Roster:
    return Roster(
        "team", 3, None, ("admin",), (),
        projects={"webapp": 1, "infra": 1, "docs": 2}, grants=grants,
        revocations=tuple(Revocation(kid, 3) for kid in revoked),
    )  # fmt: skip


WRITABLE = {
    "writer-everywhere": (
        roster((Grant("me", "webapp"), Grant("me", "infra"), Grant("me", "docs"))),
        ["docs", "infra", "webapp"],
    ),
    "read-only-is-left-out": (
        roster((Grant("me", "webapp", write=False), Grant("me", "infra"))),
        ["infra"],
    ),
    "no-grant-no-project": (roster((Grant("other", "webapp"),)), []),
    "revoked-pushes-nowhere": (roster((Grant("me", "webapp"),), revoked=("me",)), []),
}


@pytest.mark.parametrize(("team_roster", "expected"), WRITABLE.values(), ids=WRITABLE.keys())
def test_writable_projects(team_roster: Roster, expected: list[str]) -> None:
    assert writable_projects(team_roster, "me") == expected
