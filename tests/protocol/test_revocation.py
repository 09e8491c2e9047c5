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
    drop_ahead,
    drop_writer,
    dropped_writers,
    recovered_clock,
)
from sealmem.protocol.roster import Pin
from tests.protocol.team_world import NOW, PROJECT, TEAM, make_record, member_key, member_of

ALICE, BOB, CAROL = member_key(2), member_key(3), member_key(4)
BASE = make_record(ALICE, 1)


def version(editor: str, wall: int, counter: int = 0, content: str = "text") -> Record:
    return BASE.evolve(editor=editor, hlc=Hlc(wall, counter), content=content)


A1 = version(ALICE.kid, NOW + 1, content="alice's original")
B2 = version(BOB.kid, NOW + 2, content="bob's edit")
C3 = version(CAROL.kid, NOW + 3, content="carol's same text, more keywords")
C4 = version(CAROL.kid, NOW + 4, content="carol again")


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
    assert drop_writer({BASE.id: versions}, CAROL.kid) == {BASE.id: expected}


def test_drop_writer_takes_a_set_of_writers() -> None:
    assert drop_writer({BASE.id: [C4, B2, A1]}, {CAROL.kid, BOB.kid}) == {BASE.id: A1}


def test_drop_ahead_keeps_the_best_version_within_the_bound() -> None:
    now = NOW + 10
    far = version(BOB.kid, now + MAX_AHEAD_MS + 1)
    edge = version(CAROL.kid, now + MAX_AHEAD_MS)
    assert drop_ahead({BASE.id: [far, A1]}, now) == {BASE.id: A1}
    assert drop_ahead({BASE.id: [far, edge, A1]}, now) == {BASE.id: edge}
    assert drop_ahead({BASE.id: [far]}, now) == {BASE.id: None}


def test_recovered_clock() -> None:
    now = NOW
    assert recovered_clock(Hlc(now + MAX_AHEAD_MS, 9), [], now) is None  # within the bound
    assert recovered_clock(Hlc(2**62, 0), [], now) == Hlc(now, 0)
    assert recovered_clock(Hlc(2**62, 0), [Hlc(now + 5, 3)], now) == Hlc(now + 5, 3)
    assert recovered_clock(Hlc(2**62, 0), [Hlc(now - 5, 3)], now) == Hlc(now, 0)


def test_dropped_writers_follow_the_pins_per_project() -> None:
    v1 = admin.genesis(SUITE, TEAM, member_of(member_key(1), "root"), created_at=1,
                       projects=[PROJECT, "docs"])  # fmt: skip
    v2 = admin.add_member(SUITE, v1, member_of(ALICE, "alice"), created_at=2,
                          projects=[PROJECT, "docs"])  # fmt: skip
    v3 = admin.add_member(SUITE, v2, member_of(BOB, "bob"), created_at=3, projects=[PROJECT])
    v4 = admin.revoke(SUITE, v3, ALICE.kid, created_at=4, pins={PROJECT: Pin(3, "cd" * 32)})
    v5 = admin.revoke(SUITE, v4, BOB.kid, created_at=5)
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


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["id-1", "id-2", "id-3"]), _VERSIONS, max_size=3))
def test_drop_writer_properties(by_id: dict[str, list[Record]]) -> None:
    result = drop_writer(by_id, CAROL.kid)
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
    again = drop_writer({k: [v] if v else [] for k, v in result.items()}, CAROL.kid)
    assert again == result  # idempotent
