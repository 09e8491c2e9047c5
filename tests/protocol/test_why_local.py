"""Why a member's team memories in a project stay on its machine: one row per rule."""

from __future__ import annotations

import pytest

from sealmem.protocol import push
from sealmem.protocol.push import LOCAL_REASONS, why_local, writable_projects
from sealmem.protocol.roster import Grant, Member, Revocation, Roster

ME = Member("me", "me", b"\x01" * 32, b"\x02" * 32)
OTHER = Member("other", "other", b"\x03" * 32, b"\x04" * 32)


def roster(grants: tuple[Grant, ...], *, revoked: bool = False, member: bool = True) -> Roster:
    return Roster(
        "team", 3, None, ("other",), (ME, OTHER) if member else (OTHER,),
        projects={"webapp": 1, "infra": 1}, grants=grants,
        revocations=(Revocation("me", 3),) if revoked else (),
    )  # fmt: skip


CASES = {
    "writer-pushes": (roster((Grant("me", "webapp"),)), "webapp", None),
    "read-only": (roster((Grant("me", "webapp", write=False),)), "webapp", push.LOCAL_READ_ONLY),
    "no-grant": (roster((Grant("me", "infra"),)), "webapp", push.LOCAL_NO_GRANT),
    "unregistered": (roster((Grant("me", "webapp"),)), "scratch", push.LOCAL_UNREGISTERED),
    "revoked-writer": (
        roster((Grant("me", "webapp"),), revoked=True), "webapp", push.LOCAL_REVOKED,
    ),
    "revoked-in-unregistered": (roster((), revoked=True), "scratch", push.LOCAL_REVOKED),
    "not-approved-yet": (roster((), member=False), "webapp", push.LOCAL_NOT_MEMBER),
    "no-roster-yet": (None, "webapp", push.LOCAL_NOT_MEMBER),
}  # fmt: skip


@pytest.mark.parametrize(("team_roster", "project", "expected"), CASES.values(), ids=CASES.keys())
def test_why_local(team_roster: Roster | None, project: str, expected: str | None) -> None:
    assert why_local(team_roster, "me", project) == expected
    assert expected is None or expected in LOCAL_REASONS


@pytest.mark.parametrize("team_roster", [c[0] for c in CASES.values() if c[0] is not None])
def test_writable_projects_are_those_without_a_reason(team_roster: Roster) -> None:
    """One rule: the push's project list and the local-only reasons never disagree."""
    expected = [p for p in sorted(team_roster.projects) if why_local(team_roster, "me", p) is None]
    assert writable_projects(team_roster, "me") == expected
