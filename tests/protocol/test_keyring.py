"""Keyrings: one epoch key wrapped to each reader, signed by an admin."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sealmem.crypto import SUITE, ContentKey
from sealmem.protocol.errors import DecryptionError, InputError, Rejected
from sealmem.protocol.keyring import Keyring, build_keyring, extend_keyring
from sealmem.protocol.roster import Grant, Revocation, Roster
from sealmem.protocol.verify import accept_keyring, accept_roster

from .team_world import PROJECT, World, member_of, next_roster


@pytest.fixture
def world() -> World:
    return World()


def reason_of(call: object) -> str:
    assert callable(call)
    with pytest.raises(Rejected) as info:
        call()
    return info.value.reason


def test_every_reader_unwraps_the_same_key(world: World) -> None:
    roster = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), roster.sign(world.root))
    state, keyring = accept_keyring(SUITE, state, world.keyring(roster).sign(world.root))
    assert state.keyring(PROJECT, 1) == keyring
    for member in (world.root, world.alice, world.bob):
        assert ContentKey.unwrap(keyring.wraps[member.kid], member) == world.key1
    assert world.mallory.kid not in keyring.wraps  # not a reader: no wrap
    # a member cannot open another member's wrap
    with pytest.raises(DecryptionError):
        ContentKey.unwrap(keyring.wraps[world.alice.kid], world.bob)


def test_body_round_trips(world: World) -> None:
    keyring = world.keyring(world.roster_v1())
    assert Keyring.from_body(keyring.to_body()) == keyring


def test_same_keyring_again_is_harmless_a_different_one_is_a_fork(world: World) -> None:
    roster = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), roster.sign(world.root))
    data = world.keyring(roster).sign(world.root)  # SealedBox is randomised: keep the bytes
    state, _ = accept_keyring(SUITE, state, data)
    same, _ = accept_keyring(SUITE, state, data)
    assert same is state
    other = build_keyring(world.key2, roster, PROJECT)
    assert reason_of(lambda: accept_keyring(SUITE, state, other.sign(world.root))) == "fork"


def test_signed_by_non_admin(world: World) -> None:
    roster = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), roster.sign(world.root))
    data = world.keyring(roster).sign(world.alice)
    assert reason_of(lambda: accept_keyring(SUITE, state, data)) == "not-admin"


def test_epoch_must_match_the_cited_roster(world: World) -> None:
    roster = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), roster.sign(world.root))
    future = build_keyring(world.key2, roster, PROJECT, epoch=2)
    assert reason_of(lambda: accept_keyring(SUITE, state, future.sign(world.root))) == (
        "epoch-unknown"
    )


def test_cites_an_unknown_roster(world: World) -> None:
    roster = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), roster.sign(world.root))
    ahead = replace(world.keyring(roster), roster_version=2)
    assert reason_of(lambda: accept_keyring(SUITE, state, ahead.sign(world.root))) == (
        "roster-unknown"
    )


def test_wrap_to_a_non_reader(world: World) -> None:
    roster = world.roster_v1()
    v2 = next_roster(
        roster,
        members=(*roster.members, member_of(world.mallory, "mallory")),
        grants=(*roster.grants, Grant(world.mallory.kid, PROJECT, read=False, write=True)),
    )
    state, _ = accept_roster(SUITE, world.pinned(), roster.sign(world.root))
    state, _ = accept_roster(SUITE, state, v2.sign(world.root))
    keyring = build_keyring(world.key1, v2, PROJECT)
    assert world.mallory.kid not in keyring.wraps
    leaky = replace(
        keyring,
        wraps={**keyring.wraps, world.mallory.kid: world.key1.wrap_to(world.mallory.box_public)},
    )
    assert reason_of(lambda: accept_keyring(SUITE, state, leaky.sign(world.root))) == (
        "no-read-grant"
    )


def test_revoked_reader_gets_no_wrap_in_the_next_epoch(world: World) -> None:
    v1 = world.roster_v1()
    v2 = next_roster(v1, projects={PROJECT: 2}, revocations=(Revocation(world.bob.kid, 2),))
    state = world.state()
    state, _ = accept_roster(SUITE, state, v2.sign(world.root))
    keyring = build_keyring(world.key2, v2, PROJECT)
    assert world.bob.kid not in keyring.wraps
    state, _ = accept_keyring(SUITE, state, keyring.sign(world.root))
    assert state.keyring(PROJECT, 2) == keyring
    assert state.keyring(PROJECT, 1) is not None  # old epochs stay readable


def test_unknown_project_and_cross_team(world: World) -> None:
    roster = world.roster_v1()
    state, _ = accept_roster(SUITE, world.pinned(), roster.sign(world.root))
    other = replace(world.keyring(roster), project="elsewhere")
    assert reason_of(lambda: accept_keyring(SUITE, state, other.sign(world.root))) == (
        "unknown-project"
    )
    foreign = replace(world.keyring(roster), team="other-team")
    assert reason_of(lambda: accept_keyring(SUITE, state, foreign.sign(world.root))) == (
        "cross-team"
    )
    with pytest.raises(InputError, match="not registered"):
        build_keyring(world.key1, roster, "elsewhere")


# -- older epochs re-published for new readers ---------------------------------------


def _rotated_with_carol(world: World) -> tuple[Roster, Roster]:
    """v2: carol joins as a reader and the project moves to epoch 2 (bob revoked)."""
    v1 = world.roster_v1()
    carol = member_of(world.mallory, "carol")
    return v1, next_roster(
        v1,
        members=(*v1.members, carol),
        grants=(*v1.grants, Grant(carol.kid, PROJECT, read=True, write=False)),
        projects={PROJECT: 2},
        revocations=(Revocation(world.bob.kid, 2),),
    )


def test_an_older_epoch_is_re_published_for_a_new_reader_and_stays_older(world: World) -> None:
    _, v2 = _rotated_with_carol(world)
    state = world.state()  # v1 and its epoch 1 keyring
    old = state.keyring(PROJECT, 1)
    assert old is not None
    state, _ = accept_roster(SUITE, state, v2.sign(world.root))
    current = build_keyring(world.key2, v2, PROJECT)
    state, _ = accept_keyring(SUITE, state, current.sign(world.root))
    history = extend_keyring(old, world.key1, v2, [world.mallory.kid])
    assert history.key_id == old.key_id
    assert history.roster_version == 2
    assert world.bob.kid in old.wraps
    assert world.bob.kid not in history.wraps  # revoked
    assert world.mallory.kid in history.wraps
    state, accepted = accept_keyring(SUITE, state, history.sign(world.root))
    assert state.keyring(PROJECT, 1) == accepted == history
    assert state.keyring(PROJECT, 2) == current  # the current epoch is the roster's
    assert state.roster is not None
    assert state.roster.projects[PROJECT] == 2
    assert ContentKey.unwrap(history.wraps[world.mallory.kid], world.mallory) == world.key1


def test_extend_keyring_refuses_what_the_verifier_would(world: World) -> None:
    v1, v2 = _rotated_with_carol(world)
    old = world.keyring(v1)
    with pytest.raises(InputError, match="key_id"):
        extend_keyring(old, world.key2, v2, [])
    with pytest.raises(InputError, match="may not read"):
        extend_keyring(old, world.key1, v2, [world.bob.kid])
    with pytest.raises(InputError, match="newer"):
        extend_keyring(old, world.key1, v1, [])
