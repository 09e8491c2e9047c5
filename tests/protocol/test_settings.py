"""protocol.settings: the periods a team sets, in roster v2 (SPEC "Team settings")."""

from __future__ import annotations

import pytest

from sealmem.crypto import SUITE
from sealmem.protocol import admin
from sealmem.protocol.errors import InputError, Rejected
from sealmem.protocol.roster import Roster
from sealmem.protocol.settings import DEFAULTS, NO_SETTINGS, TeamSettings
from tests.protocol.team_world import PROJECT, TEAM, member_key, member_of

ROOT = member_key(1)


def _v2(*edits: admin.Edit) -> Roster:
    v1 = admin.genesis(SUITE, TEAM, member_of(ROOT, "root"), created_at=1, projects=[PROJECT])
    return admin.next_roster(SUITE, v1, admin.upgrading(ROOT.kid, {}), *edits, created_at=2)


@pytest.mark.parametrize(
    ("wire", "review", "stale"),
    [
        ({"review_days": 2, "stale_days": 30}, 2, 30),
        ({"review_days": 0}, 0, 180),
        ({"stale_days": 3650}, 7, 3650),
        ({"review_days": 365, "stale_days": 1}, 365, 1),
    ],
)
def test_a_settings_object_parses_and_a_missing_period_is_the_default(
    wire: dict[str, int], review: int, stale: int
) -> None:
    parsed = TeamSettings.from_wire(wire)
    assert (parsed.effective("review_days"), parsed.effective("stale_days")) == (review, stale)
    assert parsed.to_wire() == wire


@pytest.mark.parametrize(
    "wire",
    [
        {},
        {"review_days": 366},
        {"review_days": -1},
        {"stale_days": 0},
        {"stale_days": 3651},
        {"review_days": True},
        {"review_days": 2.0},
        {"review_days": "2"},
        {"review_days": 2, "grace_days": 1},
        [2, 30],
    ],
)
def test_a_bad_settings_object_is_malformed(wire: object) -> None:
    with pytest.raises(Rejected) as info:
        TeamSettings.from_wire(wire)
    assert info.value.reason == "malformed"


def test_a_roster_that_sets_none_has_no_settings_field_and_hashes_as_before() -> None:
    plain = _v2()
    assert "settings" not in plain.to_body()
    assert plain.settings == NO_SETTINGS
    assert {n: plain.settings.effective(n) for n in DEFAULTS} == {
        "review_days": 7,
        "stale_days": 180,
    }
    again = Roster.from_body(plain.to_body(), SUITE)
    assert again.hash(SUITE) == plain.hash(SUITE)


def test_setting_one_period_keeps_the_other_and_successors_carry_both() -> None:
    first = _v2(admin.setting_periods(review_days=2, stale_days=30))
    assert first.to_body()["settings"] == {"review_days": 2, "stale_days": 30}
    second = admin.next_roster(SUITE, first, admin.setting_periods(stale_days=90), created_at=3)
    assert second.settings == TeamSettings(2, 90)
    grown = admin.next_roster(SUITE, second, admin.adding_project("docs"), created_at=4)
    assert Roster.from_body(grown.to_body(), SUITE).settings == TeamSettings(2, 90)


def test_setting_periods_is_refused_out_of_bounds_in_v1_or_with_nothing_to_set() -> None:
    with pytest.raises(InputError, match=r"review_days 400 is outside 0\.\.365 days"):
        admin.setting_periods(review_days=400)
    v1 = admin.genesis(SUITE, TEAM, member_of(ROOT, "root"), created_at=1, projects=[PROJECT])
    with pytest.raises(InputError, match="need roster v2"):
        admin.next_roster(SUITE, v1, admin.setting_periods(review_days=2), created_at=2)
    with pytest.raises(InputError, match="give a period"):
        admin.next_roster(SUITE, _v2(), admin.setting_periods(), created_at=3)
