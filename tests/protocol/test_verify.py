"""The manifest verifier: chains, grants, revocation pins, resets and witnesses."""

from __future__ import annotations

import importlib
import types
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.crypto import SUITE, MemberKey
from sealmem.protocol import canonical, reasons
from sealmem.protocol.envelope import seal
from sealmem.protocol.errors import Rejected, StoreError
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.manifest import Head
from sealmem.protocol.roster import Grant, Pin, Reset, Revocation
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import (
    MAX_MANIFEST_BYTES,
    accept_keyring,
    accept_manifest,
    accept_roster,
    open_snapshot,
)

from .team_world import PROJECT, World, make_record, next_roster

READER_NOW = 1_760_000_060_000  # the reader's clock: a minute after the test records


@pytest.fixture
def world() -> World:
    return World()


def reason_of(state: TrustedState, data: bytes, **where: str) -> str:
    before = (dict(state.heads), dict(state.witnessed), dict(state.rosters))
    with pytest.raises(Rejected) as info:
        accept_manifest(SUITE, state, data, **where)
    assert (dict(state.heads), dict(state.witnessed), dict(state.rosters)) == before
    assert info.value.reason in reasons.REASONS
    return info.value.reason


def chain(world: World, writer: MemberKey, length: int, **kw: object) -> list[bytes]:
    """``length`` consecutive manifests of ``writer``, each adding a record."""
    out: list[bytes] = []
    prev = None
    for seq in range(1, length + 1):
        records = [make_record(writer, i) for i in range(seq)]
        snap = world.snapshot(writer, records, seq=seq, prev=prev, **kw)  # type: ignore[arg-type]
        prev = snap.manifest.hash(SUITE)
        out.append(snap.envelope)
    return out


def test_accept_then_open(world: World) -> None:
    state = world.state()
    records = [make_record(world.alice, i) for i in range(20)]
    snap = world.snapshot(world.alice, records)
    new, m = accept_manifest(SUITE, state, snap.envelope, project=PROJECT, writer=world.alice.kid)
    head = new.head(world.alice.kid, PROJECT)
    assert head is not None
    assert (head.seq, head.hash) == (1, m.hash(SUITE))
    assert state.head(world.alice.kid, PROJECT) is None
    opened = open_snapshot(SUITE, world.key1, m, snap.new_chunks, now_ms=READER_NOW)
    assert {r.id for r in opened} == {r.id for r in records}
    again, _ = accept_manifest(SUITE, new, snap.envelope)
    assert again is new
    with pytest.raises(TypeError):
        new.heads[("x", "y")] = head  # type: ignore[index]


def test_rollback_fork_and_gaps(world: World) -> None:
    m1, m2, m3 = chain(world, world.alice, 3)
    state = world.state()
    state, _ = accept_manifest(SUITE, state, m1)
    state, _ = accept_manifest(SUITE, state, m3)  # a gap is fine
    assert reason_of(state, m2) == "rollback"
    assert reason_of(state, m1) == "rollback"
    other3 = world.snapshot(world.alice, [make_record(world.alice, 99)], seq=3, prev=None)
    assert reason_of(state, other3.envelope) == "fork"
    head = state.head(world.alice.kid, PROJECT)
    assert head is not None
    wrong_prev = world.snapshot(world.alice, [make_record(world.alice, 1)], seq=4, prev="00" * 32)
    assert reason_of(state, wrong_prev.envelope) == "fork"
    restart = world.snapshot(world.alice, [make_record(world.alice, 1)], seq=9, prev=None)
    assert reason_of(state, restart.envelope) == "fork"
    good = world.snapshot(world.alice, [make_record(world.alice, 1)], seq=4, prev=head.hash)
    state, _ = accept_manifest(SUITE, state, good.envelope)
    assert state.head(world.alice.kid, PROJECT) == replace(
        head, seq=4, hash=good.manifest.hash(SUITE)
    )


def test_writer_must_be_a_member_with_write_grant(world: World) -> None:
    state = world.state()
    stranger = world.snapshot(world.mallory, [make_record(world.mallory, 1)])
    assert reason_of(state, stranger.envelope) == "unknown-writer"
    v1 = state.roster
    assert v1 is not None
    grants = tuple(replace(g, write=False) if g.kid == world.bob.kid else g for g in v1.grants)
    state, _ = accept_roster(SUITE, state, next_roster(v1, grants=grants).sign(world.root))
    reader_only = world.snapshot(world.bob, [make_record(world.bob, 1)])
    assert reason_of(state, reader_only.envelope) == "no-write-grant"


def test_revocation_pin_keeps_earlier_manifests(world: World) -> None:
    m1, m2, m3 = chain(world, world.alice, 3)
    state = world.state()
    for data in (m1, m2):
        state, m = accept_manifest(SUITE, state, data)
    pin = Pin(2, m.hash(SUITE))
    v1 = state.roster
    assert v1 is not None
    v2 = next_roster(
        v1,
        revocations=(Revocation(world.alice.kid, 2, {PROJECT: pin}),),
        grants=tuple(g for g in v1.grants if g.kid != world.alice.kid),
    )
    fresh = world.state()
    fresh, _ = accept_roster(SUITE, fresh, v2.sign(world.root))
    fresh, _ = accept_manifest(SUITE, fresh, m2)  # a new reader still accepts the pinned one
    assert reason_of(fresh, m3) == "revoked"
    v2_unpinned = next_roster(v1, revocations=(Revocation(world.alice.kid, 2),))
    other = world.state()
    other, _ = accept_roster(SUITE, other, v2_unpinned.sign(world.root))
    assert reason_of(other, m1) == "revoked"


def test_admin_reset_starts_a_new_chain_once(world: World) -> None:
    old = chain(world, world.alice, 3)
    state = world.state()
    for data in old:
        state, _ = accept_manifest(SUITE, state, data)
    v1 = state.roster
    assert v1 is not None
    reset_roster = next_roster(v1, resets=(Reset(world.alice.kid, PROJECT, 2),)).sign(world.root)
    state, _ = accept_roster(SUITE, state, reset_roster)
    restored = world.snapshot(world.alice, [make_record(world.alice, 1)], roster_version=2)
    state, _ = accept_manifest(SUITE, state, restored.envelope)
    head = state.head(world.alice.kid, PROJECT)
    assert head is not None
    assert (head.seq, head.reset_at) == (1, 2)
    assert reason_of(state, old[2]) == "rollback"  # the lost chain cannot come back
    again = world.snapshot(world.alice, [make_record(world.alice, 2)], roster_version=2)
    assert reason_of(state, again.envelope) == "fork"  # one reset, one new chain
    # a reader who never saw the old chain refuses it too, even with a higher seq
    newcomer = world.state()
    newcomer, _ = accept_roster(SUITE, newcomer, reset_roster)
    newcomer, _ = accept_manifest(SUITE, newcomer, restored.envelope)
    assert reason_of(newcomer, old[2]) == "rollback"
    assert reason_of(accept_roster(SUITE, world.state(), reset_roster)[0], old[2]) == "rollback"


def test_witnessed_heads_expose_equivocation(world: World) -> None:
    a1 = world.snapshot(world.alice, [make_record(world.alice, 1)])
    a1_evil = world.snapshot(world.alice, [make_record(world.alice, 2)])
    evil_head = a1_evil.manifest.head(SUITE)
    bob = world.snapshot(world.bob, [make_record(world.bob, 3)], heads=[evil_head])
    state = world.state()
    # we saw a1; bob says he saw another seq 1 of alice: someone shows different histories
    seen_a1, _ = accept_manifest(SUITE, state, a1.envelope)
    assert reason_of(seen_a1, bob.envelope) == "equivocation"
    # the other order: bob's witness first, then a conflicting alice manifest
    seen_bob, _ = accept_manifest(SUITE, state, bob.envelope)
    assert seen_bob.witnessed[(world.alice.kid, PROJECT)].by == world.bob.kid
    assert reason_of(seen_bob, a1.envelope) == "equivocation"
    agreeing, _ = accept_manifest(SUITE, seen_bob, a1_evil.envelope)
    assert agreeing.head(world.alice.kid, PROJECT) is not None
    # two witnesses that disagree with each other
    carol_like = world.snapshot(
        world.root, [make_record(world.root, 4)], heads=[a1.manifest.head(SUITE)]
    )
    assert reason_of(seen_bob, carol_like.envelope) == "equivocation"


def test_epochs_and_rosters_must_be_known(world: World) -> None:
    state = world.state()
    e2 = world.snapshot(world.alice, [make_record(world.alice, 1)], epoch=2, key=world.key2)
    assert reason_of(state, e2.envelope) == "epoch-unknown"
    ahead = world.snapshot(world.alice, [make_record(world.alice, 1)], roster_version=7)
    assert reason_of(state, ahead.envelope) == "roster-unknown"
    v1 = state.roster
    assert v1 is not None
    v2 = next_roster(v1, projects={PROJECT: 2})
    state, _ = accept_roster(SUITE, state, v2.sign(world.root))
    state, _ = accept_keyring(SUITE, state, build_keyring(world.key2, v2, PROJECT).sign(world.root))
    e2 = world.snapshot(
        world.alice, [make_record(world.alice, 1)], epoch=2, key=world.key2, roster_version=2
    )
    state, m = accept_manifest(SUITE, state, e2.envelope)
    assert m.epoch == 2
    stale_claim = world.snapshot(world.bob, [make_record(world.bob, 1)], epoch=2, key=world.key2)
    assert reason_of(state, stale_claim.envelope) == "epoch-unknown"  # v1 said epoch 1


def test_misfiled_and_mis_signed(world: World) -> None:
    state = world.state()
    snap = world.snapshot(world.alice, [make_record(world.alice, 1)])
    assert reason_of(state, snap.envelope, project="other") == "cross-project"
    assert reason_of(state, snap.envelope, writer=world.bob.kid) == "signer-mismatch"
    body = snap.manifest.to_body()
    assert reason_of(state, seal(body, "manifest", world.bob)) == "signer-mismatch"
    assert reason_of(state, seal(body, "join", world.alice)) == "wrong-context"
    assert reason_of(state, seal({**body, "team": "zzz-team"}, "manifest", world.alice)) == (
        "cross-team"
    )
    assert reason_of(
        state, seal({**body, "format": "sealmem/manifest/v9"}, "manifest", world.alice)
    ) == ("unknown-format")
    assert reason_of(state, seal({**body, "project": "nope"}, "manifest", world.alice)) == (
        "unknown-project"
    )
    assert reason_of(state, snap.envelope.replace(b'"seq":1', b'"seq":2')) == "bad-signature"
    assert reason_of(state, snap.envelope + b" ") == "not-canonical"
    assert reason_of(state, b"[" * 100_000 + b"]" * 100_000) == "not-canonical"
    assert reason_of(state, b"x" * (MAX_MANIFEST_BYTES + 1)) == "too-large"
    big_heads = [Head(world.bob.kid, f"p{i}", 1, "00" * 32) for i in range(20000)]
    big = {**body, "heads": [h.to_wire() for h in big_heads]}
    assert reason_of(state, seal(big, "manifest", world.alice)) == "too-large"


def test_no_roster_yet(world: World) -> None:
    snap = world.snapshot(world.alice, [make_record(world.alice, 1)])
    assert reason_of(world.pinned(), snap.envelope) == "roster-unknown"


def test_grant_helpers_are_exact(world: World) -> None:
    roster = world.roster_v1()
    assert roster.grant(world.alice.kid, PROJECT) == Grant(world.alice.kid, PROJECT, True, True)
    assert roster.grant(world.mallory.kid, PROJECT) is None


def test_trusted_state_round_trips_through_canonical_json(world: World) -> None:
    a1 = world.snapshot(world.alice, [make_record(world.alice, 1)])
    bob = world.snapshot(world.bob, [make_record(world.bob, 2)], heads=[a1.manifest.head(SUITE)])
    state = world.state()
    state, _ = accept_manifest(SUITE, state, bob.envelope)
    state, _ = accept_manifest(SUITE, state, a1.envelope)
    data = canonical.encode(state.to_wire())
    again = TrustedState.from_wire(canonical.decode(data), SUITE)
    assert again.to_wire() == state.to_wire()
    assert again.roster == state.roster
    assert again.witnessed[(world.alice.kid, PROJECT)].by == world.bob.kid
    # the restored state keeps refusing what the original refused
    assert reason_of(
        again, world.snapshot(world.alice, [make_record(world.alice, 3)]).envelope
    ) == ("fork")
    damaged = state.to_wire()
    damaged["heads"][0]["seq"] = "one"
    with pytest.raises(StoreError, match="damaged"):
        TrustedState.from_wire(damaged, SUITE)


MODULES = ["admin", "chunks", "encoding", "envelope", "keyring", "manifest", "reasons", "roster",
           "snapshot", "state", "suite", "verify"]  # fmt: skip


@pytest.mark.parametrize("name", MODULES)
def test_all_lists_every_public_name(name: str) -> None:
    module = importlib.import_module(f"sealmem.protocol.{name}")
    elsewhere = {
        (attr, id(getattr(other, attr)))
        for other_name in ("canonical", "errors", "record", *MODULES)
        if other_name != name
        for other in [importlib.import_module(f"sealmem.protocol.{other_name}")]
        for attr in other.__all__
    }
    public = {
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and getattr(value, "__module__", module.__name__) == module.__name__
        and not isinstance(value, types.ModuleType)
        and (attr, id(value)) not in elsewhere
        and attr not in {"annotations", "K", "V"}
    }
    assert public <= set(module.__all__), public - set(module.__all__)
    assert all(hasattr(module, attr) for attr in module.__all__)


FUZZ_WORLD = World()
FUZZ_STATE = FUZZ_WORLD.state()
FUZZ_SNAP = FUZZ_WORLD.snapshot(
    FUZZ_WORLD.alice, [make_record(FUZZ_WORLD.alice, i) for i in range(3)]
)
FUZZ_ROSTER = next_roster(FUZZ_WORLD.roster_v1()).sign(FUZZ_WORLD.root)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_byte_flip_is_refused_with_a_named_reason(data: st.DataObject) -> None:
    which = data.draw(st.sampled_from(["manifest", "roster", "chunk"]))
    if which == "chunk":
        ref = FUZZ_SNAP.manifest.chunks[0]
        blob = bytearray(FUZZ_SNAP.new_chunks[ref.id])
    else:
        blob = bytearray(FUZZ_SNAP.envelope if which == "manifest" else FUZZ_ROSTER)
    at = data.draw(st.integers(0, len(blob) - 1))
    blob[at] ^= data.draw(st.integers(1, 255))

    def attempt() -> object:
        if which == "manifest":
            return accept_manifest(SUITE, FUZZ_STATE, bytes(blob))
        if which == "roster":
            return accept_roster(SUITE, FUZZ_STATE, bytes(blob))
        chunks = {**FUZZ_SNAP.new_chunks, ref.id: bytes(blob)}
        return open_snapshot(SUITE, FUZZ_WORLD.key1, FUZZ_SNAP.manifest, chunks, now_ms=READER_NOW)

    with pytest.raises(Rejected) as info:
        attempt()
    assert info.value.reason in reasons.REASONS


def test_a_revoked_key_cannot_mint_manifests_below_its_pin(world: World) -> None:
    # The pinned manifest is a full snapshot; anything else under a revoked key is
    # refused, including a lower seq that a reader still behind the pin never saw.
    m1, m2, m3 = chain(world, world.alice, 3)
    state = world.state()
    for data in (m1, m2, m3):
        state, m = accept_manifest(SUITE, state, data)
    v1 = state.roster
    assert v1 is not None
    v2 = next_roster(
        v1,
        revocations=(Revocation(world.alice.kid, 2, {PROJECT: Pin(3, m.hash(SUITE))}),),
        grants=tuple(g for g in v1.grants if g.kid != world.alice.kid),
    )
    behind = world.state()
    behind, _ = accept_manifest(SUITE, behind, m1)
    behind, _ = accept_roster(SUITE, behind, v2.sign(world.root))
    first = behind.head(world.alice.kid, PROJECT)
    assert first is not None
    forged = [make_record(world.alice, 99)]
    minted = world.snapshot(world.alice, forged, seq=2, prev=first.hash)
    assert reason_of(behind, minted.envelope) == "revoked"
    assert reason_of(behind, m2) == "revoked"
    behind, _ = accept_manifest(SUITE, behind, m3)  # the pinned one, past the gap
    head = behind.head(world.alice.kid, PROJECT)
    assert head is not None
    assert head.seq == 3
