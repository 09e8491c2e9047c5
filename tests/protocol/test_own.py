"""Which manifest of ours a push builds on (protocol.own), decided from values: our own
manifests read back count only under our key, a delta is rebuilt from the kept base or the
transport's copy, and what the transport lost makes the push repair."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sealmem.crypto import SUITE
from sealmem.protocol import reasons
from sealmem.protocol.errors import Rejected, StoreError
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.manifest import ChunkRef, Manifest, peek
from sealmem.protocol.own import Damage, Held, Ours, Recorded, bases_wanted, ours, own_manifest
from sealmem.protocol.push import Landed, OwnHead, PushPlan, plan_reuse
from tests.protocol.team_world import member_key

ME, OTHER = member_key(1), member_key(2)
PROJECT = "app"


def _ref(bucket: int, n: int = 0) -> ChunkRef:
    return ChunkRef(bucket, SUITE.blake2b(f"{bucket}/{n}".encode(), size=32).hex(), 100)


def _full(seq: int, refs: dict[int, int], writer: str = ME.kid) -> Manifest:
    chunks = tuple(_ref(b, n) for b, n in sorted(refs.items()))
    return Manifest(
        team="acme-team", project=PROJECT, writer=writer, seq=seq, prev=None, epoch=1,
        roster_version=1, buckets=64, chunks=chunks, records=len(chunks),
    )  # fmt: skip


BASE = _full(1, {0: 0, 1: 0, 2: 0})
BASE_DATA = BASE.sign(ME)
CHANGED = _full(2, {0: 0, 1: 1, 2: 0})  # bucket 1 written again
DELTA_DATA = CHANGED.against(SUITE, BASE, BASE.hash(SUITE)).sign(ME)


def recorded(data: bytes) -> Recorded:
    m = peek(data)
    return Recorded(data, m.seq, m.hash(SUITE), Hlc(5, 0), 3, 0)


def heads(rec: Recorded | None, kept: bytes | None, held: Held | None = None) -> Ours:
    return ours(
        SUITE, writer=ME.kid, project=PROJECT, sign_public=ME.sign_public, recorded=rec,
        kept=kept, held=held or Held(),
    )  # fmt: skip


def test_own_manifest_is_ours_only_under_our_key_for_our_project() -> None:
    assert own_manifest(
        SUITE, BASE_DATA, writer=ME.kid, sign_public=ME.sign_public, project=PROJECT
    ) == BASE  # fmt: skip
    theirs = _full(1, {0: 0}, writer=OTHER.kid).sign(OTHER)
    forged = _full(1, {0: 0}).sign(OTHER)  # our kid in the body, another key's signature
    for data, project, reason in [
        (theirs, PROJECT, reasons.SIGNER_MISMATCH),
        (forged, PROJECT, reasons.SIGNER_MISMATCH),
        (BASE_DATA, "elsewhere", reasons.CROSS_PROJECT),
        (b"\x00garbage", PROJECT, reasons.NOT_CANONICAL),
    ]:
        with pytest.raises(Rejected) as info:
            own_manifest(SUITE, data, writer=ME.kid, sign_public=ME.sign_public, project=project)
        assert info.value.reason == reason


def test_a_recorded_delta_is_rebuilt_from_the_kept_base_without_the_transport() -> None:
    rec = recorded(DELTA_DATA)
    assert bases_wanted(SUITE, rec, BASE_DATA, []) == frozenset()
    found = heads(rec, BASE_DATA)
    assert found.landed is None
    assert found.keep is None
    assert found.own is not None
    assert found.own.manifest.chunks == CHANGED.chunks
    assert found.own.full == (BASE, BASE.hash(SUITE))


def test_a_base_lost_here_is_read_from_the_transport_and_kept() -> None:
    rec = recorded(DELTA_DATA)
    assert bases_wanted(SUITE, rec, None, []) == {1}
    assert bases_wanted(SUITE, rec, b"damaged", []) == {1}
    found = heads(rec, b"damaged", Held((), {1: [b"planted", BASE_DATA]}))
    assert found.own is not None
    assert found.own.manifest.chunks == CHANGED.chunks
    assert found.keep == BASE_DATA


def test_a_base_lost_everywhere_stops_the_push_unless_a_newer_one_of_ours_landed() -> None:
    rec = recorded(DELTA_DATA)
    with pytest.raises(StoreError, match="doctor"):
        heads(rec, None)
    newer = _full(3, {0: 2}).sign(ME)
    found = heads(rec, None, Held([newer]))
    assert found.landed is not None
    assert found.landed.manifest.seq == 3
    assert found.own is not None
    assert not found.own.manifest.complete


def test_landed_is_our_first_manifest_that_verifies_and_rebuilds() -> None:
    forged = _full(9, {0: 0}).sign(OTHER)
    orphan = _full(8, {0: 1, 1: 1}, writer=ME.kid)
    orphan_delta = replace(orphan, delta=None).against(SUITE, _full(4, {0: 1}), "cd" * 32)
    newest = [forged, orphan_delta.sign(ME), DELTA_DATA, BASE_DATA]
    assert bases_wanted(SUITE, None, None, newest) == {1, 4}
    found = heads(None, None, Held(newest, {1: [BASE_DATA]}))
    assert found.own is None
    assert found.landed is not None
    assert (found.landed.manifest.seq, found.landed.hash) == (2, peek(DELTA_DATA).hash(SUITE))
    assert found.landed.full == (BASE, BASE.hash(SUITE))
    assert found.landed.manifest.chunks == CHANGED.chunks
    assert found.keep == BASE_DATA


@pytest.mark.parametrize(
    ("damage", "own", "landed", "repairs"),
    [
        (Damage(), True, False, False),
        (Damage(chunks=frozenset({"c"})), True, True, True),
        (Damage(manifest=True), True, False, True),
        (Damage(base=True), True, False, True),
        (Damage(manifest=True), True, True, False),  # the push builds on the landed one
        (Damage(manifest=True), False, False, False),  # nothing of ours recorded
    ],
    ids=["intact", "lost-chunk", "lost-manifest", "lost-base", "landed-newer", "never-pushed"],
)  # fmt: skip
def test_what_the_transport_lost_makes_the_push_repair(
    damage: Damage, own: bool, landed: bool, repairs: bool
) -> None:
    head = OwnHead(BASE, "h", Hlc(1, 0), 3, 0) if own else None
    arrived = Landed(CHANGED, "l") if landed else None
    assert damage.repairs(Ours(head, arrived)) is repairs


def test_reuse_keeps_our_digests_but_for_lost_chunks_and_adopted_manifests() -> None:
    digests = {0: "d0", 1: "d1", 2: "d2"}
    plan = PushPlan(None, 2, "h", None, BASE)
    previous, rebuild = plan_reuse(
        plan, epoch=1, published=3, digests=digests, dirty=[], damaged={_ref(1).id}
    )
    assert previous is not None
    assert dict(previous.digests) == {0: "d0", 2: "d2"}
    assert rebuild is not None
    assert rebuild.buckets == {1}
    adopted = replace(plan, adopt=Landed(BASE, "h"))
    previous, rebuild = plan_reuse(adopted, epoch=1, published=3, digests=digests, dirty=[])
    assert previous is not None
    assert dict(previous.digests) == {}
    assert rebuild is None
    assert plan_reuse(PushPlan(None, 1), epoch=1, published=3, digests=digests, dirty=[]) == (
        None, None,
    )  # fmt: skip
