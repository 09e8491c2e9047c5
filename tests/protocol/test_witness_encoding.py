"""The witness encoding (SPEC.md "Witness encoding"): a v3 delta lists its heads against
its base, rebuilds to exactly the set its writer signed, costs what moved rather than the
team's size, and still teaches the heads it lists itself when its base is withheld."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import replace

import pytest

from sealmem.crypto import SUITE
from sealmem.protocol import canonical, reasons, witness
from sealmem.protocol.bases import rebuild, rebuild_with
from sealmem.protocol.envelope import seal
from sealmem.protocol.errors import Rejected
from sealmem.protocol.heads import heads_against, heads_root, rebuild_heads
from sealmem.protocol.manifest import DELTA_FORMAT, Head, Manifest, peek
from sealmem.protocol.snapshot import PreviousSnapshot, Snapshot
from sealmem.protocol.verify import accept_manifest
from tests.protocol.team_world import PROJECT, World, make_record


def _kid(i: int) -> str:
    raw = hashlib.blake2b(i.to_bytes(4, "big"), digest_size=20).digest()
    return base64.b32encode(raw).decode().lower()[:26]


def _heads(n: int, seq: int = 1) -> list[Head]:
    return [Head(_kid(i), PROJECT, seq, f"{i:064x}") for i in range(n)]


def _pair(world: World, heads1: list[Head], heads2: list[Head], n: int = 20) -> list[Snapshot]:
    """A writer's full manifest, then a v3 delta against it, one record changed."""
    records = [make_record(world.alice, i) for i in range(n)]
    full = world.snapshot(world.alice, records, heads=heads1)
    records[1] = make_record(world.alice, 1, content="changed")
    snap = world.snapshot(
        world.alice, records, seq=2, prev=full.hash, heads=heads2,
        previous=PreviousSnapshot(full.manifest, full.digests),
    )  # fmt: skip
    delta = snap.manifest.against(SUITE, full.manifest, full.hash or "")
    return [full, replace(snap, manifest=delta, envelope=delta.sign(world.alice))]


def test_a_v3_delta_rebuilds_to_the_head_set_its_writer_signed() -> None:
    world = World()
    before = _heads(30)
    after = [*before[:10], replace(before[10], seq=2), *before[12:], *_heads(32)[30:]]
    full, delta = _pair(world, before, after)
    parsed = peek(delta.envelope)
    assert parsed.to_body()["format"] == DELTA_FORMAT
    assert not parsed.heads_known
    assert parsed.heads == ()
    assert parsed.delta is not None
    assert parsed.delta.heads is not None
    assert [h.writer for h in parsed.delta.heads.changed] == sorted(
        [before[10].writer, *(h.writer for h in _heads(32)[30:])]
    )
    assert parsed.delta.heads.removed == ((before[11].writer, PROJECT),)
    whole = rebuild(SUITE, parsed, [(full.manifest, full.hash or "")])
    assert whole.heads == tuple(sorted(after, key=lambda h: (h.writer, h.project)))
    assert whole.hash(SUITE) == delta.manifest.hash(SUITE)


def test_a_one_change_delta_costs_what_moved_not_the_team_size() -> None:
    world = World()
    heads = _heads(1000)
    moved = [replace(heads[7], seq=2), *heads[:7], *heads[8:]]
    full, delta = _pair(world, heads, moved)
    assert len(full.envelope) > 140_000  # ~143 B per head
    assert len(delta.envelope) <= 10 * 1024, len(delta.envelope)


def test_heads_that_do_not_rebuild_to_the_root_are_tampered() -> None:
    base = _heads(5)
    listed = heads_against(SUITE, [replace(base[0], seq=9), *base[1:]], base)
    rebuilt = {h.writer: h.seq for h in rebuild_heads(SUITE, base, listed, "m")}
    assert rebuilt == {**{h.writer: 1 for h in base}, base[0].writer: 9}
    with pytest.raises(Rejected) as caught:
        rebuild_heads(SUITE, [base[0], *base[2:]], listed, "m")  # another base: another set
    assert caught.value.reason == reasons.TAMPERED
    assert heads_root(SUITE, base) != heads_root(SUITE, base[1:])


def test_a_delta_whose_base_is_withheld_still_teaches_the_heads_it_lists() -> None:
    world = World()
    state = world.state()
    x1 = world.snapshot(world.bob, [make_record(world.bob, 1)])
    x2 = world.snapshot(world.bob, [make_record(world.bob, 2)], seq=2, prev=x1.hash)
    unchanged = Head(_kid(1), PROJECT, 4, "cd" * 32)
    full, delta = _pair(world, [unchanged], [unchanged, x2.manifest.head(SUITE)])
    news = [(world.alice.kid, delta.envelope)]

    def withheld(m: Manifest) -> Manifest:
        raise Rejected(reasons.MISSING_BASE, "withheld")

    with pytest.raises(Rejected) as caught:  # the delta itself is refused ...
        accept_manifest(SUITE, state, delta.envelope, rebuild=withheld)
    assert caught.value.reason == reasons.MISSING_BASE
    learned, _ = witness.learn(SUITE, state, PROJECT, news, withheld)  # ... but it teaches
    assert learned.witnessed[(world.bob.kid, PROJECT)].seq == 2  # the head it lists
    assert (unchanged.writer, PROJECT) not in learned.witnessed  # only those
    with pytest.raises(Rejected) as caught:
        accept_manifest(SUITE, learned, x1.envelope)
    assert caught.value.reason == reasons.BEHIND_WITNESS

    def offered(m: Manifest) -> Manifest:
        return rebuild(SUITE, m, [(full.manifest, full.hash or "")])

    learned, _ = witness.learn(SUITE, state, PROJECT, news, offered)  # with its base: all
    assert learned.witnessed[(unchanged.writer, PROJECT)].seq == 4


@pytest.mark.parametrize("fmt", [[], {}, ["sealmem/manifest/v3"], None, 3])
def test_a_format_that_is_not_a_string_is_an_unknown_format(fmt: object) -> None:
    """The format names the key set a body is read with; one that is not a string (a list
    or an object cannot even be looked up) is ``unknown-format``, never a TypeError, for a
    manifest accepted, learned from or offered as a base (passed over)."""
    world = World()
    state = world.state()
    full, delta = _pair(world, _heads(3), _heads(3, seq=2))
    body = {**canonical.decode(delta.envelope)["body"], "format": fmt}
    data = seal(body, "manifest", world.alice)
    with pytest.raises(Rejected) as caught:
        accept_manifest(SUITE, state, data)
    assert caught.value.reason == reasons.UNKNOWN_FORMAT
    learned, _ = witness.learn(SUITE, state, PROJECT, [(world.alice.kid, data)])
    assert learned is state
    m = peek(delta.envelope)
    whole, base = rebuild_with(SUITE, m, data, [data, full.envelope])
    assert base is not None
    assert base.data == full.envelope
    assert whole.heads == tuple(sorted(_heads(3, seq=2), key=lambda h: (h.writer, h.project)))
