"""protocol.revocation: dropping a writer's (or a far-ahead) versions keeps everyone else's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.crypto import SUITE
from sealmem.protocol import admin
from sealmem.protocol.hlc import MAX_AHEAD_MS, Hlc
from sealmem.protocol.merge import version_key
from sealmem.protocol.record import Record
from sealmem.protocol.revocation import (
    DropRule,
    Held,
    drop_rule,
    dropped_writers,
    heads_past_pins,
    recovered_clock,
    restamp,
)
from sealmem.protocol.roster import Pin, Roster
from sealmem.protocol.state import ChainHead
from tests.protocol.team_world import NOW, PROJECT, TEAM, make_record, member_key, member_of

ALICE, BOB, CAROL = member_key(2), member_key(3), member_key(4)
BASE = make_record(ALICE, 1)


def version(editor: str, wall: int, counter: int = 0, content: str = "text") -> Record:
    return BASE.evolve(editor=editor, hlc=Hlc(wall, counter), content=content)


A1 = version(ALICE.kid, NOW + 1, content="alice's original")
B2 = version(BOB.kid, NOW + 2, content="bob's edit")
C3 = version(CAROL.kid, NOW + 3, content="carol's same text, more keywords")
C4 = version(CAROL.kid, NOW + 4, content="carol again")


def drop_writer(
    by_id: dict[str, list[Record]], kids: set[str], now: int = NOW
) -> dict[str, Record | None]:
    """Per id, the version DropRule keeps once ``kids``' versions (and far-ahead ones) go."""
    rule = DropRule(now, frozenset(kids))
    best = {mid: rule.best([Held(v) for v in versions]) for mid, versions in by_id.items()}
    return {mid: None if held is None else held.record for mid, held in best.items()}


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        pytest.param([C3, A1], A1, id="teammate-original-comes-back"),
        pytest.param([C4, A1, C3, B2], B2, id="best-of-the-others-not-the-oldest"),
        pytest.param([C3, C4], None, id="only-the-revoked-writer-wrote-it"),
        pytest.param([B2, A1], B2, id="winner-not-by-the-writer-stays"),
        pytest.param([], None, id="nothing"),
    ],
)
def test_drop_writer_table(versions: list[Record], expected: Record | None) -> None:
    assert drop_writer({BASE.id: versions}, {CAROL.kid}) == {BASE.id: expected}


def test_drop_writer_takes_a_set_of_writers() -> None:
    assert drop_writer({BASE.id: [C4, B2, A1]}, {CAROL.kid, BOB.kid}) == {BASE.id: A1}


def test_drop_ahead_keeps_the_best_version_within_the_bound() -> None:
    now = NOW + 10
    far = version(BOB.kid, now + MAX_AHEAD_MS + 1)
    edge = version(CAROL.kid, now + MAX_AHEAD_MS)
    assert drop_writer({BASE.id: [far, A1]}, set(), now) == {BASE.id: A1}
    assert drop_writer({BASE.id: [far, edge, A1]}, set(), now) == {BASE.id: edge}
    assert drop_writer({BASE.id: [far]}, set(), now) == {BASE.id: None}


def test_recovered_clock() -> None:
    now = NOW
    assert recovered_clock(Hlc(now + MAX_AHEAD_MS, 9), [], now) is None  # within the bound
    assert recovered_clock(Hlc(2**62, 0), [], now) == Hlc(now, 0)
    assert recovered_clock(Hlc(2**62, 0), [Hlc(now + 5, 3)], now) == Hlc(now + 5, 3)
    assert recovered_clock(Hlc(2**62, 0), [Hlc(now - 5, 3)], now) == Hlc(now, 0)


def test_dropped_writers_follow_the_pins_per_project() -> None:
    v1 = admin.genesis(SUITE, TEAM, member_of(member_key(1), "root"), created_at=1,
                       projects=[PROJECT, "docs"])  # fmt: skip
    v2 = admin.next_roster(
        SUITE,
        v1,
        admin.adding_member(member_of(ALICE, "alice"), projects=[PROJECT, "docs"]),
        created_at=2,
    )
    v3 = admin.next_roster(
        SUITE, v2, admin.adding_member(member_of(BOB, "bob"), projects=[PROJECT]), created_at=3
    )
    v4 = admin.next_roster(
        SUITE, v3, admin.revoking(ALICE.kid, pins={PROJECT: Pin(3, "cd" * 32)}), created_at=4
    )
    v5 = admin.next_roster(SUITE, v4, admin.revoking(BOB.kid), created_at=5)
    assert dropped_writers(v5, PROJECT, CAROL.kid) == {BOB.kid}
    assert dropped_writers(v5, "docs", CAROL.kid) == {ALICE.kid, BOB.kid}
    assert dropped_writers(v5, "docs", BOB.kid) == {ALICE.kid}  # never its own versions
    assert dropped_writers(v3, PROJECT, CAROL.kid) == frozenset()


_EDITORS = st.sampled_from([ALICE.kid, BOB.kid, CAROL.kid])
_VERSIONS = st.lists(
    st.builds(
        version,
        _EDITORS,
        st.integers(NOW, NOW + 5),
        st.integers(0, 3),
        st.sampled_from(["a", "b"]),
    ),
    max_size=8,
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["id-1", "id-2", "id-3"]), _VERSIONS, max_size=3))
def test_drop_writer_properties(by_id: dict[str, list[Record]]) -> None:
    result = drop_writer(by_id, {CAROL.kid})
    assert result.keys() == by_id.keys()
    for mid, versions in by_id.items():
        others = [v for v in versions if v.editor != CAROL.kid]
        best = result[mid]
        if not others:
            assert best is None
            continue
        assert best is not None
        assert best.editor != CAROL.kid
        assert best in others  # never invented, never someone else's lost
        assert all(version_key(best) >= version_key(v) for v in others)  # the greatest
    again = drop_writer({k: [v] if v else [] for k, v in result.items()}, {CAROL.kid})
    assert again == result  # idempotent


# -- one rule for every drop ---------------------------------------------------------


def _revoked_roster() -> Roster:
    v1 = admin.genesis(SUITE, TEAM, member_of(member_key(1), "root"), created_at=1,
                       projects=[PROJECT, "docs"])  # fmt: skip
    v2 = admin.next_roster(
        SUITE,
        v1,
        admin.adding_member(member_of(ALICE, "alice"), projects=[PROJECT, "docs"]),
        created_at=2,
    )
    v3 = admin.next_roster(
        SUITE, v2, admin.adding_member(member_of(BOB, "bob"), projects=[PROJECT]), created_at=3
    )
    v4 = admin.next_roster(
        SUITE, v3, admin.adding_member(member_of(CAROL, "carol"), projects=[PROJECT]), created_at=4
    )
    v5 = admin.next_roster(
        SUITE, v4, admin.revoking(ALICE.kid, pins={PROJECT: Pin(3, "cd" * 32)}), created_at=5
    )
    return admin.next_roster(SUITE, v5, admin.revoking(BOB.kid), created_at=6)


def test_drop_rule_is_one_predicate() -> None:
    roster = _revoked_roster()
    rule = drop_rule(roster, PROJECT, CAROL.kid, NOW)
    assert rule.writers == {BOB.kid}
    assert rule.pins == {ALICE.kid: 3}
    far = NOW + MAX_AHEAD_MS + 1
    cases = [
        (Held(version(CAROL.kid, far)), True),  # too far ahead, whoever wrote it
        (Held(version(CAROL.kid, NOW + MAX_AHEAD_MS), 9), False),  # on the bound
        (Held(version(BOB.kid, NOW), 1), True),  # revoked without a pin
        (Held(version(ALICE.kid, NOW), 3), False),  # up to the pin: kept
        (Held(version(ALICE.kid, NOW), 4), True),  # after the pin: dropped
        (Held(version(ALICE.kid, NOW), None), False),  # not pulled (imported): no seq to judge
    ]
    assert [rule.drops(h) for h, _ in cases] == [want for _, want in cases]
    # the best remaining version is the greatest that no part of the rule drops
    held = [h for h, _ in cases]
    assert rule.best(held) == held[1]
    assert rule.best([held[0], held[2], held[4]]) is None
    # a revoked member never drops its own versions; no roster: only the clock bound
    assert drop_rule(roster, PROJECT, ALICE.kid, NOW).pins == {}
    clock_only = drop_rule(None, PROJECT, CAROL.kid, NOW)
    assert not clock_only.drops(Held(version(BOB.kid, NOW), 1))
    assert clock_only.drops(Held(version(CAROL.kid, far)))


def test_heads_past_pins() -> None:
    roster = _revoked_roster()
    pin = ChainHead(3, "cd" * 32)
    heads = {
        (ALICE.kid, PROJECT): ChainHead(4, "ab" * 32),
        (CAROL.kid, PROJECT): ChainHead(9, "ab" * 32),  # not revoked
    }
    assert heads_past_pins(roster, heads, CAROL.kid) == [(ALICE.kid, PROJECT)]
    assert heads_past_pins(roster, heads, ALICE.kid) == []
    for head in (pin, ChainHead(2, "ab" * 32)):  # at the pin, or behind it: nothing to do
        assert heads_past_pins(roster, {(ALICE.kid, PROJECT): head}, CAROL.kid) == []
    forked = {(ALICE.kid, PROJECT): ChainHead(3, "ef" * 32)}
    assert heads_past_pins(roster, forked, CAROL.kid) == [(ALICE.kid, PROJECT)]


def test_recovered_clock_ignores_winners_beyond_the_bound() -> None:
    far = Hlc(NOW + MAX_AHEAD_MS + 1, 0)
    assert recovered_clock(Hlc(2**62, 0), [far, Hlc(NOW - 5, 0)], NOW) == Hlc(NOW, 0)


def test_restamp_wins_over_what_it_replaced() -> None:
    poisoned = version(CAROL.kid, NOW + 365 * 86_400_000)
    kept = Hlc(NOW + 1000, 4)  # a teammate's version within the bound, in history
    record, clock = restamp(poisoned, Hlc(NOW, 0), [kept, poisoned.hlc], me=CAROL.kid, now_ms=NOW)
    assert record.hlc == clock
    assert kept < record.hlc < Hlc(NOW + MAX_AHEAD_MS, 0)
    assert record.evolve(hlc=poisoned.hlc) == poisoned  # same memory, only a new clock
    again, _ = restamp(poisoned, Hlc(NOW, 0), [], me=ALICE.kid, now_ms=NOW + 50)
    assert (again.editor, again.hlc) == (ALICE.kid, Hlc(NOW + 50, 0))
