"""Roster bodies, the roster chain and the strict encodings they rely on."""

from __future__ import annotations

import sys
import unicodedata
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealmem.crypto import SUITE
from sealmem.protocol import admin, canonical
from sealmem.protocol.encoding import b64d, b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.errors import InputError, Rejected
from sealmem.protocol.names import HIDDEN_RANGES, hidden_at, name_problem
from sealmem.protocol.roster import Grant, Pin, Reset, Revocation, Roster
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_roster

from .team_world import PROJECT, World, member_key, member_of, next_roster


def reject_reason(call: object) -> str:
    assert callable(call)
    with pytest.raises(Rejected) as info:
        call()
    return info.value.reason


@pytest.fixture
def world() -> World:
    return World()


def test_b64_round_trip_and_strictness() -> None:
    for n in range(40):
        data = bytes(range(n))
        assert b64d(b64e(data)) == data
        assert "=" not in b64e(data)
    for bad in ("a", "ab==", "a+b/", "ab c", "AB", "AAB"):  # "AB"/"AAB": non-zero trailing bits
        with pytest.raises(ValueError, match="base64url"):
            b64d(bad)


def test_body_round_trips(world: World) -> None:
    roster = world.roster_v1()
    body = roster.to_body()
    again = Roster.from_body(canonical.decode(canonical.encode(body)), SUITE)
    assert again == roster
    assert again.hash(SUITE) == roster.hash(SUITE)
    assert len(roster.hash(SUITE)) == 64


def test_queries(world: World) -> None:
    roster = world.roster_v1()
    assert roster.is_admin(world.root.kid)
    assert not roster.is_admin(world.alice.kid)
    assert roster.can_write(world.alice.kid, PROJECT)
    assert not roster.can_write(world.alice.kid, "other")
    assert {m.kid for m in roster.readers(PROJECT)} == {
        world.root.kid,
        world.alice.kid,
        world.bob.kid,
    }


def test_v1_pins_to_root(world: World) -> None:
    state, roster = accept_roster(SUITE, world.pinned(), world.roster_v1().sign(world.root))
    assert state.roster == roster
    assert roster.version == 1


def test_v1_signed_by_another_key_is_not_admin(world: World) -> None:
    data = world.roster_v1().sign(world.alice)
    assert reject_reason(lambda: accept_roster(SUITE, world.pinned(), data)) == "not-admin"


def test_v1_must_list_the_pinned_root_key(world: World) -> None:
    roster = world.roster_v1()
    other_root = member_key(9)
    fake = replace(
        roster,
        admins=(other_root.kid,),
        members=(member_of(other_root, "root", "admin"), *roster.members[1:]),
        grants=roster.grants[1:],
    ).check(SUITE)
    # Signed by the impostor: the pinned root did not sign it.
    assert reject_reason(lambda: accept_roster(SUITE, world.pinned(), fake.sign(other_root))) == (
        "not-admin"
    )


def test_chain_extends_and_rejects_stale_forked_and_skipping(world: World) -> None:
    v1 = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), v1.sign(world.root))
    v2 = next_roster(v1, projects={PROJECT: 1, "docs": 1})
    state2, got = accept_roster(SUITE, state, v2.sign(world.root))
    assert got.version == 2
    assert state2.roster == v2
    assert state.roster == v1  # the old value is untouched
    # re-reading the current version is harmless
    same, _ = accept_roster(SUITE, state2, v2.sign(world.root))
    assert same is state2
    assert reject_reason(lambda: accept_roster(SUITE, state2, v1.sign(world.root))) == "rollback"
    v2_fork = next_roster(v1, projects={PROJECT: 1, "other": 1})
    assert reject_reason(lambda: accept_roster(SUITE, state2, v2_fork.sign(world.root))) == "fork"
    v4 = next_roster(next_roster(v2))
    assert reject_reason(lambda: accept_roster(SUITE, state2, v4.sign(world.root))) == (
        "roster-not-extending"
    )
    v3 = next_roster(v2)
    final = state2
    for version in (v3, v4):  # in order, each extending the last
        final, _ = accept_roster(SUITE, final, version.sign(world.root))
    assert final.roster == v4


def test_next_version_must_be_signed_by_a_previous_admin(world: World) -> None:
    v1 = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), v1.sign(world.root))
    # alice makes herself admin in v2, but she was no admin in v1
    alice = member_of(world.alice, "alice", "admin")
    v2 = next_roster(
        v1,
        admins=(world.root.kid, world.alice.kid),
        members=(v1.members[0], alice, v1.members[2]),
    )
    assert reject_reason(lambda: accept_roster(SUITE, state, v2.sign(world.alice))) == "not-admin"
    state2, _ = accept_roster(SUITE, state, v2.sign(world.root))
    v3 = next_roster(v2, admins=(world.alice.kid,))
    state3, _ = accept_roster(SUITE, state2, v3.sign(world.alice))
    assert state3.roster is not None
    assert state3.roster.admins == (world.alice.kid,)


def test_history_is_append_only(world: World) -> None:
    v1 = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), v1.sign(world.root))
    lowered = next_roster(v1, projects={PROJECT: 1})
    state2, _ = accept_roster(SUITE, state, lowered.sign(world.root))
    rotated = next_roster(lowered, projects={PROJECT: 2})
    state3, _ = accept_roster(SUITE, state2, rotated.sign(world.root))
    back = next_roster(rotated, projects={PROJECT: 1})
    assert reject_reason(lambda: accept_roster(SUITE, state3, back.sign(world.root))) == (
        "roster-not-extending"
    )
    revoked = next_roster(
        rotated, revocations=(Revocation(world.bob.kid, 4, {PROJECT: Pin(3, "ab" * 32)}),)
    )
    state4, _ = accept_roster(SUITE, state3, revoked.sign(world.root))
    unrevoked = next_roster(revoked, revocations=())
    assert reject_reason(lambda: accept_roster(SUITE, state4, unrevoked.sign(world.root))) == (
        "roster-not-extending"
    )
    backdated = next_roster(revoked, resets=(Reset(world.alice.kid, PROJECT, 2),))
    assert reject_reason(lambda: accept_roster(SUITE, state4, backdated.sign(world.root))) == (
        "roster-not-extending"
    )


def test_prev_hash_must_match(world: World) -> None:
    v1 = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), v1.sign(world.root))
    v2 = replace(next_roster(v1), prev="00" * 32)
    assert reject_reason(lambda: accept_roster(SUITE, state, v2.sign(world.root))) == (
        "roster-not-extending"
    )


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda b: b.update(format="sealmem/roster/v9"), "unknown-format"),
        (lambda b: b.update(team="other-team"), "cross-team"),
        (lambda b: b.update(extra=1), "malformed"),
        (lambda b: b["members"][1].update(kid=b["members"][2]["kid"]), "malformed"),
        (lambda b: b["members"][1].update(sign_public="AAAA"), "malformed"),
        (lambda b: b.update(admins=[]), "malformed"),
        (lambda b: b["grants"].append(dict(b["grants"][0])), "malformed"),
        (lambda b: b.update(prev="00" * 32), "malformed"),
        (lambda b: b["members"][1].update(role="owner"), "malformed"),
    ],
    ids=[
        "format",
        "team",
        "unknown-field",
        "kid-not-key",
        "short-key",
        "no-admin",
        "dup-grant",
        "v1-with-prev",
        "bad-role",
    ],
)
def test_bad_bodies_are_refused(world: World, mutate: object, reason: str) -> None:
    body = world.roster_v1().to_body()
    assert callable(mutate)
    mutate(body)
    data = seal(body, "roster", world.root)
    assert reject_reason(lambda: accept_roster(SUITE, world.pinned(), data)) == reason


def test_grant_for_unknown_project_is_malformed(world: World) -> None:
    roster = world.roster_v1()
    bad = replace(roster, grants=(*roster.grants, Grant(world.alice.kid, "nope")))
    with pytest.raises(Rejected, match="unknown member/project"):
        bad.check(SUITE)


def test_tampered_and_noncanonical_bytes(world: World) -> None:
    data = world.roster_v1().sign(world.root)
    spaced = data.replace(b'"version":1', b'"version": 1')
    assert reject_reason(lambda: accept_roster(SUITE, world.pinned(), spaced)) == "not-canonical"
    renamed = data.replace(b'"name":"alice"', b'"name":"alicf"')
    assert reject_reason(lambda: accept_roster(SUITE, world.pinned(), renamed)) == ("bad-signature")


def test_admin_flow_from_genesis_to_revocation(world: World) -> None:
    root = member_of(world.root, "root")
    v1 = admin.genesis(SUITE, "acme-team", root, created_at=1, projects=[PROJECT])
    assert v1.admins == (world.root.kid,)
    v2 = admin.next_roster(
        SUITE,
        v1,
        admin.adding_member(member_of(world.alice, "alice"), projects=[PROJECT]),
        created_at=2,
    )
    v3 = admin.next_roster(
        SUITE,
        v2,
        admin.adding_member(member_of(world.bob, "bob"), projects=[PROJECT], write=False),
        created_at=3,
    )
    v4 = admin.next_roster(SUITE, v3, admin.adding_project("docs"), created_at=4)
    v5 = admin.next_roster(
        SUITE, v4, admin.setting_grant(world.alice.kid, "docs", read=True, write=True), created_at=5
    )
    pins = {PROJECT: Pin(3, "ef" * 32)}
    v6 = admin.next_roster(SUITE, v5, admin.revoking(world.alice.kid, pins=pins), created_at=6)
    v7 = admin.next_roster(SUITE, v6, admin.resetting_chain(world.bob.kid, PROJECT), created_at=7)
    state = TrustedState.pin(SUITE, "acme-team", world.root.sign_public)
    for version in (v1, v2, v3, v4, v5, v6, v7):
        state, _ = accept_roster(SUITE, state, version.sign(world.root))
    final = state.roster
    assert final == v7
    assert not final.can_write(world.bob.kid, PROJECT)
    assert final.can_read(world.bob.kid, PROJECT)
    assert not final.can_read(world.alice.kid, PROJECT)
    assert final.projects == {PROJECT: 2, "docs": 2}  # both projects alice could read rotate
    revocation = final.revocation(world.alice.kid)
    assert revocation is not None
    assert (revocation.at_version, dict(revocation.pins)) == (6, pins)
    assert final.latest_reset(world.bob.kid, PROJECT) == Reset(world.bob.kid, PROJECT, 7)
    assert {m.kid for m in final.readers(PROJECT)} == {world.root.kid, world.bob.kid}


def test_admin_refusals(world: World) -> None:
    root = member_of(world.root, "root")
    v1 = admin.genesis(SUITE, "acme-team", root, created_at=1, projects=[PROJECT])
    with pytest.raises(InputError, match="last admin"):
        admin.next_roster(SUITE, v1, admin.revoking(world.root.kid), created_at=2)
    with pytest.raises(InputError, match="already in the roster"):
        admin.next_roster(SUITE, v1, admin.adding_member(root), created_at=2)
    with pytest.raises(InputError, match="not registered"):
        admin.next_roster(SUITE, v1, admin.rotating("docs"), created_at=2)
    with pytest.raises(InputError, match="must match"):
        admin.next_roster(SUITE, v1, admin.adding_project("../etc"), created_at=2)
    with pytest.raises(InputError, match="not an active member"):
        admin.next_roster(
            SUITE,
            v1,
            admin.setting_grant(world.bob.kid, PROJECT, read=True, write=True),
            created_at=2,
        )
    assert admin.next_roster(SUITE, v1, admin.rotating(PROJECT), created_at=2).projects == {
        PROJECT: 2
    }


HOSTILE_NAMES = [
    "\x1b]0;pwned\x07",  # retitles the terminal window
    "eve\x1b[2J",  # erases the screen
    "\u202eecila",  # right-to-left override: shows as "alice"
    "al\u2066ice\u2069",  # isolates
    "al\u200bice",  # zero-width space
    "al\u200dice",  # a joiner between ASCII letters only hides
    "\u200dalice",
    "alice\u200c",
    "ali\u00adce",  # soft hyphen
    "alice\u2028bob",  # line separator
    "alice\nbob",
    "bob\x85",  # C1 next line
    "bob\U000e0041",  # tag character
    "",
    "x" * 65,
]
FINE_NAMES = [
    "alice",
    "Ana María O'Neill",
    "José",
    "\u0639\u0644\u06cc\u200c\u0631\u0636\u0627",  # Persian: zero-width non-joiner between letters
    "\U0001f469\u200d\U0001f4bb dev",  # an emoji sequence
    "x" * 64,
]


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=[ascii(n) for n in HOSTILE_NAMES])
def test_hostile_member_names_are_refused(world: World, name: str) -> None:
    assert name_problem(name) is not None
    key = member_key(7)
    with pytest.raises(Rejected, match="name") as info:
        member_of(key, name)
    assert info.value.reason == "malformed"
    body = world.roster_v1().to_body()
    body["members"][1]["name"] = name
    data = seal(body, "roster", world.root)
    assert reject_reason(lambda: accept_roster(SUITE, world.pinned(), data)) == "malformed"


@pytest.mark.parametrize("name", FINE_NAMES, ids=[ascii(n) for n in FINE_NAMES])
def test_real_names_are_accepted(world: World, name: str) -> None:
    assert name_problem(name) is None
    body = world.roster_v1().to_body()
    body["members"][1]["name"] = name
    accept_roster(SUITE, world.pinned(), seal(body, "roster", world.root))


#: Allowed in some places: joiners between two non-ASCII letters, variation selectors
#: right after one (the table's range ends that are selectors).
ALLOWED_BETWEEN = frozenset({0x200C, 0x200D, 0x180B, 0x180D, 0x180F, 0xFE00, 0xFE0F})


def test_the_refused_table_holds_every_control_format_and_separator_character() -> None:
    """The fixed table covers this Python's Cc, Cf, Zl, Zp and Cs (Unicode 15.0 or older)."""
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)) in {"Cc", "Cf", "Zl", "Zp", "Cs"}:
            assert hidden_at(f"a{chr(cp)}b", 1), f"U+{cp:04X}"


@given(
    st.text(max_size=30),
    st.sampled_from([cp for r in HIDDEN_RANGES for cp in r if cp not in ALLOWED_BETWEEN]),
    st.text(max_size=30),
)
def test_a_name_with_a_hidden_character_is_refused(before: str, cp: int, after: str) -> None:
    problem = name_problem(before + chr(cp) + after)
    assert problem is not None
    assert "U+" in problem
