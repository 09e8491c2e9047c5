"""Every hostile variant of a transport is refused with its named reason, and changes nothing."""

from __future__ import annotations

from functools import cache

import pytest

from sealmem.protocol import reasons
from sealmem.protocol.errors import Rejected
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_keyring, accept_manifest, accept_roster
from tests.support.honest_world import World, accept_view, build_world, open_view, parse_path
from tests.support.malicious import Variant, hostile_variants


@cache
def _world() -> World:
    return build_world()


def _fresh(view: str) -> TrustedState:
    world = _world()
    state = accept_view(world.suite, world.pinned(), world.earlier)
    return state if view == "earlier" else accept_view(world.suite, state, world.current)


@cache
def _trusted(view: str) -> TrustedState:
    return _fresh(view)


VARIANTS = hostile_variants(_world())


def _feed(world: World, state: TrustedState, variant: Variant) -> TrustedState:
    """Hand the hostile object to the verifier exactly as a reader would."""
    slot = parse_path(variant.target)
    data = variant.objects.get(variant.target)
    if slot.kind == "chunk":
        open_view(world, state, variant.objects, slot.project, slot.writer)
        return state
    assert data is not None
    if slot.kind == "roster":
        return accept_roster(world.suite, state, data)[0]
    if slot.kind == "keyring":
        return accept_keyring(world.suite, state, data)[0]
    return accept_manifest(world.suite, state, data, project=slot.project, writer=slot.writer)[0]


@pytest.mark.parametrize("variant", VARIANTS, ids=str)
def test_the_verifier_refuses_the_hostile_object(variant: Variant) -> None:
    world = _world()
    before = _trusted(variant.reader)
    with pytest.raises(Rejected) as info:
        _feed(world, before, variant)
    assert info.value.reason == variant.reason, info.value.detail
    # what the reader trusted is exactly what an untouched reader trusts
    assert before == _fresh(variant.reader)
    # and the honest objects are still accepted on top of it
    assert accept_view(world.suite, before, world.current) == _trusted("current")


@pytest.mark.parametrize(
    "variant", [v for v in VARIANTS if parse_path(v.target).kind != "chunk"], ids=str
)
def test_a_reader_walking_the_hostile_view_stops_at_the_target(variant: Variant) -> None:
    world = _world()
    with pytest.raises(Rejected) as info:
        accept_view(world.suite, _trusted(variant.reader), variant.objects)
    assert info.value.reason == variant.reason, info.value.detail


def test_the_honest_views_are_accepted_and_open() -> None:
    world = _world()
    state = _trusted("current")
    roster = state.roster
    assert roster is not None
    assert roster.version == 3
    for name in ("alice", "bob", "eve"):
        records = open_view(world, state, world.current, "app", world.kid(name))
        assert sorted(records, key=lambda r: r.id) == sorted(
            world.records[(name, "app")], key=lambda r: r.id
        )
    assert state.head(world.kid("alice"), "app") is not None
    assert _trusted("earlier").head(world.kid("bob"), "app") is None


def test_the_variants_cover_every_kind_of_attack() -> None:
    names = {v.name for v in VARIANTS}
    for attack in ("stale", "forked", "reordered", "swapped", "truncated", "cross-team",
                   "cross-project", "outsider", "no-write-grant", "member-signed", "garbage",
                   "wrong-context", "revoked", "equivocating", "missing"):  # fmt: skip
        assert any(attack in n for n in names), attack
    assert len(names) == len(VARIANTS)
    expected = set(reasons.REASONS) - {
        # reasons that need a chunk re-encrypted by a key holder: covered by the vectors
        reasons.TAMPERED, reasons.EDITOR_MISMATCH, reasons.WRONG_BUCKET, reasons.MALFORMED,
        reasons.CLOCK_AHEAD,
        # a delta manifest whose base the transport withholds: the vectors, and the
        # malicious transport of tests/sync/test_delta_transport.py
        reasons.MISSING_BASE,
        # a replay below what a teammate witnessed: the vectors, and the withholding
        # transport of tests/sync/test_freshness.py (over a folder and a hub)
        reasons.BEHIND_WITNESS,
        # the admin's check of a join request against its invites: not a synced object
        reasons.INVITE_UNKNOWN, reasons.INVITE_EXPIRED, reasons.INVITE_USED,
        reasons.INVITE_NAME_MISMATCH,
    }  # fmt: skip
    assert expected <= {v.reason for v in VARIANTS}
