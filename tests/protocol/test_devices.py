"""Roster v2 edits and lookups (SPEC "Devices and identity"): the upgrade from v1, a device
added and revoked, a member removed with all its devices, the last admin device kept."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sealmem.crypto import SUITE, MemberKey
from sealmem.protocol import admin as edits
from sealmem.protocol.devices import Introduced
from sealmem.protocol.errors import InputError, Rejected
from sealmem.protocol.roster import Member, Roster
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_roster

NOW = 1_760_000_000_000
ROOT, ALICE, LAPTOP, PHONE = (MemberKey(bytes([n]) * 32, bytes([n + 9]) * 32) for n in (1, 2, 3, 4))


def _v2() -> tuple[list[bytes], Roster]:
    root = Member(ROOT.kid, "root", ROOT.sign_public, ROOT.box_public, "admin")
    v1 = edits.genesis(SUITE, "acme-team", root, created_at=NOW, projects=["webapp"])
    alice = Member(ALICE.kid, "alice", ALICE.sign_public, ALICE.box_public)
    v2 = edits.next_roster(
        SUITE, v1, edits.adding_member(alice, projects=["webapp"]), created_at=NOW
    )
    v3 = edits.next_roster(
        SUITE, v2, edits.upgrading(ROOT.kid, {ROOT.kid: 1, ALICE.kid: 2}),
        edits.adding_device(
            ALICE.kid, kid=LAPTOP.kid, name="laptop", sign_public=LAPTOP.sign_public,
            box_public=LAPTOP.box_public, approved_by=ROOT.kid,
            introduced_by=Introduced(ALICE.kid, "A" * 22),
        ),
        created_at=NOW,
    )  # fmt: skip
    return [v1.sign(ROOT), v2.sign(ROOT), v3.sign(ROOT)], v3


def _accept(chain: list[bytes]) -> TrustedState:
    state = TrustedState.pin(SUITE, "acme-team", ROOT.sign_public)
    for data in chain:
        state, _ = accept_roster(SUITE, state, data)
    return state


def test_the_upgrade_lists_each_member_once_with_its_devices_under_it() -> None:
    chain, _ = _v2()
    roster = _accept(chain).roster
    assert roster is not None
    assert roster.format == "sealmem/roster/v2"
    assert [m.kid for m in roster.members] == [ROOT.kid, ALICE.kid]  # one per member
    laptop = roster.member(LAPTOP.kid)
    assert laptop is not None
    assert (laptop.id, laptop.name, laptop.device_name) == (ALICE.kid, "alice", "laptop")
    assert roster.can_write(LAPTOP.kid, "webapp")  # the member's grant
    assert roster.siblings(LAPTOP.kid) == {ALICE.kid, LAPTOP.kid}
    assert {m.kid for m in roster.readers("webapp")} == {ROOT.kid, ALICE.kid, LAPTOP.kid}
    assert roster.person(ALICE.kid).devices[0].added_at == 2  # type: ignore[union-attr]


def test_a_revoked_device_keeps_its_member_and_a_removed_member_loses_every_device() -> None:
    chain, v3 = _v2()
    v4 = edits.next_roster(SUITE, v3, edits.revoking_device(LAPTOP.kid), created_at=NOW)
    assert not v4.can_read(LAPTOP.kid, "webapp")
    assert v4.can_read(ALICE.kid, "webapp")
    assert v4.projects["webapp"] == v3.projects["webapp"] + 1
    v5 = edits.next_roster(SUITE, v4, edits.revoking(ALICE.kid), created_at=NOW)
    assert v5.person(ALICE.kid).removed_at == v5.version  # type: ignore[union-attr]
    assert v5.grant(ALICE.kid, "webapp") is None
    state = _accept([*chain, v4.sign(ROOT), v5.sign(ROOT)])
    assert state.roster == v5
    with pytest.raises(InputError, match="removed"):
        edits.next_roster(
            SUITE, v5,
            edits.adding_device(
                ALICE.kid, kid=PHONE.kid, name="phone", sign_public=PHONE.sign_public,
                box_public=PHONE.box_public, approved_by=ROOT.kid, introduced_by=None,
            ),
            created_at=NOW,
        )  # fmt: skip


def test_the_last_device_of_the_last_admin_is_not_revoked() -> None:
    _, v3 = _v2()
    with pytest.raises(InputError, match="last device of the last admin"):
        edits.next_roster(SUITE, v3, edits.revoking_device(ROOT.kid), created_at=NOW)


def test_a_removed_member_that_keeps_a_device_is_malformed() -> None:
    chain, v3 = _v2()
    alice = v3.person(ALICE.kid)
    assert alice is not None
    bad = v3.successor(SUITE, created_at=NOW, people=tuple(
        replace(p, removed_at=v3.version + 1) if p.id == ALICE.kid else p for p in v3.people
    ), grants=tuple(g for g in v3.grants if g.kid != ALICE.kid))  # fmt: skip
    with pytest.raises(Rejected) as info:
        _accept([*chain, bad.sign(ROOT)])
    assert info.value.reason == "malformed"


def test_a_member_whose_first_device_is_revoked_keeps_its_grants_and_can_be_revoked() -> None:
    _, v3 = _v2()
    v4 = edits.next_roster(SUITE, v3, edits.revoking_device(ALICE.kid), created_at=NOW)
    assert v4.can_read(LAPTOP.kid, "webapp")  # the member reads on through its laptop
    assert not v4.can_read(ALICE.kid, "webapp")
    with pytest.raises(InputError, match="already revoked"):
        edits.next_roster(SUITE, v4, edits.revoking_device(ALICE.kid), created_at=NOW)
    v5 = edits.next_roster(
        SUITE, v4, edits.setting_grant(ALICE.kid, "webapp", read=True, write=False), created_at=NOW
    )
    assert not v5.can_write(LAPTOP.kid, "webapp")
    v6 = edits.next_roster(SUITE, v5, edits.revoking(ALICE.kid), created_at=NOW)
    assert v6.revocation(LAPTOP.kid) is not None
    assert v6.projects["webapp"] == v5.projects["webapp"] + 1


def test_a_hostile_v2_member_is_refused_by_name_not_with_a_traceback() -> None:
    _, v3 = _v2()
    body = v3.to_body()
    body["members"][1]["devices"] = []
    with pytest.raises(Rejected, match="kid of its first device"):
        Roster.from_body(body, SUITE)
    body = v3.to_body()
    body["members"][0]["id"] = "a" * 26
    with pytest.raises(Rejected, match="kid of its first device"):
        Roster.from_body(body, SUITE)


def test_an_upgrade_that_brings_back_a_revoked_v1_member_is_refused() -> None:
    root = Member(ROOT.kid, "root", ROOT.sign_public, ROOT.box_public, "admin")
    v1 = edits.genesis(SUITE, "acme-team", root, created_at=NOW, projects=["webapp"])
    alice = Member(ALICE.kid, "alice", ALICE.sign_public, ALICE.box_public)
    v2 = edits.next_roster(
        SUITE, v1, edits.adding_member(alice, projects=["webapp"]), created_at=NOW
    )
    v3 = edits.next_roster(SUITE, v2, edits.revoking(ALICE.kid), created_at=NOW)
    v4 = edits.next_roster(
        SUITE, v3, edits.upgrading(ROOT.kid, {ROOT.kid: 1, ALICE.kid: 2}), created_at=NOW
    )
    assert v4.person(ALICE.kid).removed_at == 3  # type: ignore[union-attr]
    chain = [v1.sign(ROOT), v2.sign(ROOT), v3.sign(ROOT)]
    assert _accept([*chain, v4.sign(ROOT)]).roster == v4
    # SPEC "upgrade": a revoked member gets removed_at = its revocation's at_version
    back = replace(v4, people=tuple(
        replace(p, removed_at=None) if p.id == ALICE.kid else p for p in v4.people
    ))  # fmt: skip
    with pytest.raises(Rejected) as info:
        _accept([*chain, back.sign(ROOT)])
    assert info.value.reason == "roster-not-extending"
    assert "removed" in info.value.detail
