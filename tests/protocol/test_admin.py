"""protocol.admin: every roster edit an admin makes, its rules, and properties over edit chains."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.crypto import SUITE, MemberKey
from sealmem.protocol import admin
from sealmem.protocol.errors import InputError
from sealmem.protocol.roster import Pin, Roster
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_roster
from tests.protocol.team_world import PROJECT, TEAM, member_key, member_of

KEYS = [member_key(n) for n in range(1, 6)]  # KEYS[0] is the root admin
PROJECTS = [PROJECT, "docs", "infra"]


def _v1() -> Roster:
    return admin.genesis(SUITE, TEAM, member_of(KEYS[0], "root"), created_at=1, projects=[PROJECT])


def _team() -> Roster:
    """root (admin), a second admin, alice and bob, all on PROJECT."""
    roster = _v1()
    second = member_of(KEYS[1], "second", "admin")
    alice, bob = member_of(KEYS[2], "alice"), member_of(KEYS[3], "bob")
    return admin.next_roster(
        SUITE, roster,
        admin.adding_member(second, projects=[PROJECT]),
        admin.adding_member(alice, projects=[PROJECT]),
        admin.adding_member(bob, projects=[PROJECT], write=False),
        created_at=2,
    )  # fmt: skip


def test_several_edits_make_one_version_chained_to_the_previous() -> None:
    v1 = _v1()
    v2 = _team()
    assert (v2.version, v2.prev) == (2, v1.hash(SUITE))
    assert [m.name for m in v2.members] == ["root", "second", "alice", "bob"]
    assert v2.admins == (KEYS[0].kid, KEYS[1].kid)
    assert not v2.can_write(KEYS[3].kid, PROJECT)
    assert v2.can_read(KEYS[3].kid, PROJECT)
    with pytest.raises(InputError, match="at least one change"):
        admin.next_roster(SUITE, v2, created_at=3)


def test_revoke_drops_grants_and_admin_role_and_rotates_what_it_could_read() -> None:
    v2 = _team()
    v3 = admin.next_roster(
        SUITE, v2, admin.adding_project("docs"), created_at=3
    )  # both admins read it
    v4 = admin.next_roster(
        SUITE, v3, admin.revoking(KEYS[1].kid, pins={PROJECT: Pin(2, "ab" * 32)}), created_at=4
    )
    assert [g for g in v4.grants if g.kid == KEYS[1].kid] == []
    assert KEYS[1].kid not in v4.admins
    assert v4.member(KEYS[1].kid).role == "member"  # type: ignore[union-attr]
    assert v4.projects == {PROJECT: 2, "docs": 2}  # it could read both
    revocation = v4.revocation(KEYS[1].kid)
    assert revocation is not None
    assert revocation.at_version == 4
    assert dict(revocation.pins) == {PROJECT: Pin(2, "ab" * 32)}


@pytest.mark.parametrize("read", [True, False])
def test_a_grant_to_a_revoked_or_unknown_member_is_refused(read: bool) -> None:
    v3 = admin.next_roster(SUITE, _team(), admin.revoking(KEYS[2].kid), created_at=3)
    with pytest.raises(InputError, match="revoked in roster v3"):
        admin.next_roster(
            SUITE,
            v3,
            admin.setting_grant(KEYS[2].kid, PROJECT, read=read, write=True),
            created_at=4,
        )
    with pytest.raises(InputError, match="not in the roster"):
        admin.next_roster(
            SUITE,
            v3,
            admin.setting_grant(KEYS[4].kid, PROJECT, read=read, write=True),
            created_at=4,
        )
    with pytest.raises(InputError, match="not an active member"):
        admin.next_roster(SUITE, v3, admin.revoking(KEYS[2].kid), created_at=4)


def test_a_new_project_is_granted_to_every_admin_and_the_named_member() -> None:
    v2 = _team()
    v3 = admin.next_roster(
        SUITE, v2,
        admin.adding_project("infra"),
        admin.setting_grant(KEYS[3].kid, "infra", read=True, write=False),
        created_at=3,
    )  # fmt: skip
    assert v3.version == 3
    assert v3.projects["infra"] == 1
    readers = {m.kid for m in v3.readers("infra")}
    assert readers == {KEYS[0].kid, KEYS[1].kid, KEYS[3].kid}
    assert all(v3.can_write(k.kid, "infra") for k in KEYS[:2])
    assert not v3.can_write(KEYS[3].kid, "infra")
    with pytest.raises(InputError, match="not registered"):
        admin.next_roster(
            SUITE,
            v2,
            admin.setting_grant(KEYS[3].kid, "infra", read=True, write=True),
            created_at=3,
        )


def test_an_issued_member_is_recorded_as_generated_by_the_admin() -> None:
    issued = replace(member_of(KEYS[4], "dave"), issued_by_admin=True)
    v2 = admin.next_roster(
        SUITE, _v1(), admin.adding_member(issued, projects=[PROJECT], read=False), created_at=2
    )
    dave = v2.member(KEYS[4].kid)
    assert dave is not None
    assert dave.issued_by_admin
    grant = v2.grant(KEYS[4].kid, PROJECT)
    assert grant is not None
    assert (grant.read, grant.write) == (False, True)
    assert not v2.can_read(KEYS[4].kid, PROJECT)


def test_the_last_admin_cannot_be_revoked_and_bad_names_are_refused() -> None:
    with pytest.raises(InputError, match="last admin"):
        admin.next_roster(SUITE, _v1(), admin.revoking(KEYS[0].kid), created_at=2)
    with pytest.raises(InputError, match="must match"):
        admin.genesis(SUITE, TEAM, member_of(KEYS[0], "root"), created_at=1, projects=["../x"])
    with pytest.raises(InputError, match="already registered"):
        admin.next_roster(SUITE, _v1(), admin.adding_project(PROJECT), created_at=2)


# -- properties over chains of edits -------------------------------------------------

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "add-admin", "project", "grant", "revoke", "rotate", "reset"]),
        st.integers(0, len(KEYS) - 1),
        st.sampled_from(PROJECTS),
        st.booleans(),
        st.booleans(),
    ),
    min_size=1,
    max_size=14,
)


def _edit(op: str, key: MemberKey, project: str, read: bool, write: bool) -> admin.Edit:
    if op == "add":
        return admin.adding_member(member_of(key, f"m{key.kid[:4]}"), projects=[PROJECT] if
                                   read else [], write=write)  # fmt: skip
    if op == "add-admin":
        return admin.adding_member(member_of(key, f"a{key.kid[:4]}", "admin"))
    if op == "project":
        return admin.adding_project(project)
    if op == "grant":
        return admin.setting_grant(key.kid, project, read=read, write=write)
    if op == "revoke":
        return admin.revoking(key.kid)
    if op == "rotate":
        return admin.rotating(project)
    return admin.resetting_chain(key.kid, project)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(_OPS)
def test_every_edit_is_the_next_version_the_verifier_accepts(
    ops: list[tuple[str, int, str, bool, bool]],
) -> None:
    by_kid = {k.kid: k for k in KEYS}
    roster = _v1()
    state, _ = accept_roster(SUITE, TrustedState.pin(SUITE, TEAM, KEYS[0].sign_public),
                             roster.sign(KEYS[0]))  # fmt: skip
    for n, (op, who, project, read, write) in enumerate(ops):
        try:
            nxt = admin.next_roster(
                SUITE, roster, _edit(op, KEYS[who], project, read, write), created_at=10 + n
            )
        except InputError:
            continue
        assert (nxt.version, nxt.prev) == (roster.version + 1, roster.hash(SUITE))
        assert nxt.check(SUITE) is nxt
        signer = by_kid[next(a for a in roster.admins if roster.is_admin(a))]
        state, _ = accept_roster(SUITE, state, nxt.sign(signer))  # the real chain checks
        for r in nxt.revocations:
            assert nxt.grant(r.kid, project) is None
            assert all(g.kid != r.kid for g in nxt.grants)
            assert r.kid not in nxt.admins
        assert nxt.admins
        assert all(nxt.is_admin(a) for a in nxt.admins)
        for p in nxt.projects:
            assert all(nxt.can_read(a, p) for a in nxt.admins if roster.projects.get(p) is None)
        roster = nxt
    assert state.roster == roster
