"""Snapshot assembly: bucketing, chunk reuse, and opening chunks back into records."""

from __future__ import annotations

import hashlib
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

import pytest

from sealmem.crypto import SUITE
from sealmem.protocol import canonical
from sealmem.protocol.chunks import (
    MAX_BUCKET_PLAINTEXT,
    MAX_SNAPSHOT_PLAINTEXT,
    SnapshotOpener,
    chunk_slot,
    decompress,
    open_chunk,
    open_snapshot,
)
from sealmem.protocol.errors import InputError, ProtocolError, Rejected
from sealmem.protocol.manifest import Manifest
from sealmem.protocol.snapshot import (
    MAX_SNAPSHOT_BUCKETS,
    MIN_BUCKETS,
    PreviousSnapshot,
    bucket_count,
    bucket_of,
    chunk_ad,
    chunk_id,
)

from .team_world import PROJECT, TEAM, World, make_record

READER_NOW = 1_760_000_060_000  # the reader's clock: a minute after the test records


@pytest.fixture
def world() -> World:
    return World()


def reason_of(call: object) -> str:
    assert callable(call)
    with pytest.raises(Rejected) as info:
        call()
    return info.value.reason


def test_bucket_count_is_a_bounded_power_of_two() -> None:
    assert bucket_count(0) == MIN_BUCKETS
    assert bucket_count(10_000) == 256
    assert bucket_count(10**7) == MAX_SNAPSHOT_BUCKETS
    for n in (0, 1, 100, 5000, 70_000, 10**6):
        b = bucket_count(n)
        assert b & (b - 1) == 0
        assert MIN_BUCKETS <= b <= MAX_SNAPSHOT_BUCKETS
    # hysteresis: a small change keeps the previous layout
    assert bucket_count(10_100, previous=128) == 128
    assert bucket_count(10**6, previous=64) == MAX_SNAPSHOT_BUCKETS


def test_round_trip(world: World) -> None:
    records = [make_record(world.alice, i) for i in range(300)]
    snap = world.snapshot(world.alice, records)
    m = snap.manifest
    assert m.records == 300
    assert m.writer == world.alice.kid
    assert set(snap.new_chunks) == {c.id for c in m.chunks}
    assert Manifest.from_body(canonical.decode(snap.envelope)["body"]) == m
    opened = open_snapshot(SUITE, world.key1, m, snap.new_chunks, now_ms=READER_NOW)
    assert sorted(opened, key=lambda r: r.id) == sorted(records, key=lambda r: r.id)
    for ref in m.chunks:
        assert chunk_id(SUITE, snap.new_chunks[ref.id]) == ref.id
        opened_chunk = open_chunk(
            SUITE, world.key1, m, ref, snap.new_chunks[ref.id], now_ms=READER_NOW
        )
        for rec in opened_chunk[0]:
            assert bucket_of(SUITE, rec.id, m.buckets) == ref.bucket


def test_ciphertext_hides_content(world: World) -> None:
    secret = "the database password rotation happens on fridays"
    snap = world.snapshot(world.alice, [make_record(world.alice, 1, content=secret)])
    blob = b"".join(snap.new_chunks.values()) + snap.envelope
    assert b"fridays" not in blob
    assert make_record(world.alice, 1).id.encode() not in blob


def test_unchanged_buckets_keep_their_chunks(world: World) -> None:
    records = [make_record(world.alice, i) for i in range(500)]
    first = world.snapshot(world.alice, records)
    prev = PreviousSnapshot(first.manifest, first.digests)
    changed = [*records[:-1], replace(records[-1], content="edited")]
    second = world.snapshot(
        world.alice, changed, seq=2, prev=first.manifest.hash(SUITE), previous=prev
    )
    assert len(second.new_chunks) == 1
    old = {c.bucket: c.id for c in first.manifest.chunks}
    new = {c.bucket: c.id for c in second.manifest.chunks}
    moved = {b for b in new if new[b] != old.get(b)}
    assert moved == {bucket_of(SUITE, records[-1].id, second.manifest.buckets)}
    everything = {**first.new_chunks, **second.new_chunks}
    opened = open_snapshot(SUITE, world.key1, second.manifest, everything, now_ms=READER_NOW)
    assert {r.id: r.content for r in opened}[records[-1].id] == "edited"


def test_new_epoch_reencrypts_everything(world: World) -> None:
    records = [make_record(world.alice, i) for i in range(100)]
    first = world.snapshot(world.alice, records)
    prev = PreviousSnapshot(first.manifest, first.digests)
    second = world.snapshot(world.alice, records, seq=2, epoch=2, key=world.key2, previous=prev)
    assert len(second.new_chunks) == len(second.manifest.chunks)
    assert not set(second.new_chunks) & set(first.new_chunks)


@pytest.mark.slow
def test_one_change_in_ten_thousand_rewrites_under_two_percent(world: World) -> None:
    def text(i: int) -> str:  # ~200 characters that compress like prose, not like zeros
        return " ".join(
            hashlib.blake2b(f"{i}/{j}".encode(), digest_size=6).hexdigest() for j in range(16)
        )

    records = [make_record(world.alice, i, content=text(i)) for i in range(10_000)]
    first = world.snapshot(world.alice, records)
    total = sum(c.size for c in first.manifest.chunks)
    prev = PreviousSnapshot(first.manifest, first.digests)
    changed = list(records)
    changed[4321] = replace(changed[4321], content="a changed memory")
    second = world.snapshot(world.alice, changed, seq=2, previous=prev)
    rewritten = sum(len(c) for c in second.new_chunks.values())
    print(f"10k records: {total} bytes in {len(first.manifest.chunks)} chunks; "
          f"one change rewrote {rewritten} bytes ({100 * rewritten / total:.2f}%)")  # fmt: skip
    assert rewritten / total < 0.02


def test_refuses_records_that_do_not_belong(world: World) -> None:
    with pytest.raises(InputError, match="edited by its writer"):
        world.snapshot(world.alice, [make_record(world.bob, 1)])
    with pytest.raises(InputError, match="its project"):
        world.snapshot(world.alice, [make_record(world.alice, 1, project="other")])
    private = replace(make_record(world.alice, 1), visibility="private")
    with pytest.raises(InputError, match="team records"):
        world.snapshot(world.alice, [private])
    with pytest.raises(InputError, match="twice"):
        world.snapshot(world.alice, [make_record(world.alice, 1)] * 2)


def test_chunk_checks(world: World) -> None:
    snap = world.snapshot(world.alice, [make_record(world.alice, i) for i in range(5)])
    m = snap.manifest
    ref = m.chunks[0]
    data = snap.new_chunks[ref.id]
    assert (
        reason_of(lambda: open_snapshot(SUITE, world.key1, m, {}, now_ms=READER_NOW))
        == "missing-chunk"
    )
    flipped = bytearray(data)
    flipped[40] ^= 1
    assert reason_of(
        lambda: open_chunk(SUITE, world.key1, m, ref, bytes(flipped), now_ms=READER_NOW)
    ) == ("bad-chunk-id")
    # a chunk re-filed under another bucket: the id matches, the AD does not
    moved = replace(ref, bucket=(ref.bucket + 1) % m.buckets)
    assert (
        reason_of(lambda: open_chunk(SUITE, world.key1, m, moved, data, now_ms=READER_NOW))
        == "tampered"
    )
    assert (
        reason_of(lambda: open_chunk(SUITE, world.key2, m, ref, data, now_ms=READER_NOW))
        == "tampered"
    )
    other_writer = replace(m, writer=world.bob.kid)
    assert reason_of(
        lambda: open_chunk(SUITE, world.key1, other_writer, ref, data, now_ms=READER_NOW)
    ) == ("tampered")
    miscounted = replace(m, records=m.records + 1)
    assert reason_of(
        lambda: open_snapshot(SUITE, world.key1, miscounted, snap.new_chunks, now_ms=READER_NOW)
    ) == ("tampered")


def encrypt_bucket(world: World, plaintext: bytes, bucket: int, *, writer: str) -> bytes:
    ad = chunk_ad(TEAM, PROJECT, writer, 1, bucket)
    return world.key1.encrypt(SUITE.pad(zlib.compress(plaintext)), ad, nonce=b"\x07" * 24)


def test_decompression_bomb_is_refused() -> None:
    bomb = zlib.compress(b"\x00" * (MAX_BUCKET_PLAINTEXT + 1), 9)
    assert len(bomb) < 100_000
    assert reason_of(lambda: decompress(bomb)) == "too-large"
    assert decompress(zlib.compress(b"ok")) == b"ok"
    assert reason_of(lambda: decompress(zlib.compress(b"hello")[:-3])) == "tampered"
    assert reason_of(lambda: decompress(b"not zlib")) == "tampered"


def test_authenticated_but_wrong_contents(world: World) -> None:
    """A writer with the key can still put the wrong things inside; each is named."""
    snap = world.snapshot(world.alice, [make_record(world.alice, 1)])
    m = snap.manifest
    rec = make_record(world.alice, 1)
    bucket = bucket_of(SUITE, rec.id, m.buckets)

    def reason_for(payload: bytes, in_bucket: int = bucket) -> str:
        chunk = encrypt_bucket(world, payload, in_bucket, writer=world.alice.kid)
        ref = replace(m.chunks[0], bucket=in_bucket, id=chunk_id(SUITE, chunk), size=len(chunk))
        return reason_of(
            lambda: open_chunk(
                SUITE, world.key1, replace(m, chunks=(ref,)), ref, chunk, now_ms=READER_NOW
            )
        )

    wire = rec.to_wire()
    assert reason_for(b'[{"b":1, "a":2}]') == "not-canonical"
    assert reason_for(canonical.encode([])) == "malformed"
    assert reason_for(canonical.encode([{**wire, "kind": "BAD KIND"}])) == "malformed"
    bobs = make_record(world.bob, 1).to_wire()
    assert reason_for(canonical.encode([bobs])) == "editor-mismatch"
    elsewhere = make_record(world.alice, 1, project="other").to_wire()
    assert reason_for(canonical.encode([elsewhere])) == "cross-project"
    assert reason_for(canonical.encode([wire]), (bucket + 1) % m.buckets) == "wrong-bucket"
    assert reason_for(canonical.encode([wire, wire])) == "malformed"


def _plaintext_size(world: World, m: Manifest, chunks: dict[str, bytes]) -> int:
    return sum(
        len(decompress(SUITE.unpad(world.key1.decrypt(chunks[ref.id], _ad(m, ref.bucket)))))
        for ref in m.chunks
    )


def _ad(m: Manifest, bucket: int) -> bytes:
    return chunk_ad(m.team, m.project, m.writer, m.epoch, bucket)


def _feed_until_refused(
    opener: SnapshotOpener, chunks: Mapping[str, bytes]
) -> tuple[int, Rejected]:
    """Feed the needed chunks in order until one is refused: (how many were fed, why)."""
    for fed, ref in enumerate(opener.needed, start=1):
        try:
            opener.feed(ref, chunks[ref.id])
        except Rejected as exc:
            return fed, exc
    raise AssertionError("every chunk was accepted")


def test_the_opener_opens_only_what_its_cache_lacks(world: World) -> None:
    records = [make_record(world.alice, i) for i in range(300)]
    snap = world.snapshot(world.alice, records)
    m = snap.manifest
    half = len(m.chunks) // 2
    first = open_snapshot(SUITE, world.key1, m, snap.new_chunks, now_ms=READER_NOW)
    counts = Counter(bucket_of(SUITE, r.id, m.buckets) for r in first)
    cache = {chunk_slot(m, ref): counts[ref.bucket] for ref in m.chunks[:half]}
    opener = SnapshotOpener(SUITE, world.key1, m, now_ms=READER_NOW, opened=cache)
    assert opener.needed == m.chunks[half:]
    got = [r for ref in opener.needed for r in opener.feed(ref, snap.new_chunks[ref.id])]
    late = {ref.bucket for ref in m.chunks[half:]}
    assert got == [r for r in first if bucket_of(SUITE, r.id, m.buckets) in late]
    assert opener.finish() == {chunk_slot(m, ref): counts[ref.bucket] for ref in m.chunks}
    assert opener.needed == ()
    # an all-cached snapshot needs nothing, and still checks the total
    assert (
        SnapshotOpener(SUITE, world.key1, m, now_ms=READER_NOW, opened=opener.finish()).needed == ()
    )
    lacking = SnapshotOpener(SUITE, world.key1, m, now_ms=READER_NOW, opened=cache)
    for ref in lacking.needed[:-1]:
        lacking.feed(ref, snap.new_chunks[ref.id])
    assert reason_of(lacking.finish) == "missing-chunk"
    # a cache that miscounts a chunk fails the total
    wrong = {**cache, chunk_slot(m, m.chunks[0]): counts[m.chunks[0].bucket] + 1}
    off = SnapshotOpener(SUITE, world.key1, m, now_ms=READER_NOW, opened=wrong)
    assert _feed_until_refused(off, snap.new_chunks)[1].reason == "tampered"


def test_the_opener_stops_as_soon_as_the_records_pass_the_manifest(world: World) -> None:
    snap = world.snapshot(world.alice, [make_record(world.alice, i) for i in range(300)])
    lying = replace(snap.manifest, records=len(snap.manifest.chunks))  # says 64, holds 300
    opener = SnapshotOpener(SUITE, world.key1, lying, now_ms=READER_NOW)
    fed, refusal = _feed_until_refused(opener, snap.new_chunks)
    assert refusal.reason == "tampered"
    assert "more than the 64 records" in refusal.detail
    assert fed < len(lying.chunks) // 2  # the rest was never opened
    assert opener.count > lying.records
    # a cache that already holds more than the manifest says is refused up front
    cache = {chunk_slot(lying, ref): 10 for ref in lying.chunks[:7]}
    assert (
        reason_of(lambda: SnapshotOpener(SUITE, world.key1, lying, now_ms=READER_NOW, opened=cache))
        == "tampered"
    )


def test_the_opener_caps_what_one_snapshot_inflates_to(world: World) -> None:
    assert MAX_SNAPSHOT_PLAINTEXT == 256 * 1024 * 1024
    snap = world.snapshot(world.alice, [make_record(world.alice, i) for i in range(300)])
    m = snap.manifest
    total = _plaintext_size(world, m, dict(snap.new_chunks))
    cap = total // 2
    opener = SnapshotOpener(SUITE, world.key1, m, now_ms=READER_NOW, max_plaintext=cap)
    _, refusal = _feed_until_refused(opener, snap.new_chunks)
    assert refusal.reason == "too-large"
    assert f"more than {cap} bytes in total" in refusal.detail
    assert opener.inflated <= cap
    assert len(opener.needed) > 1
    roomy = SnapshotOpener(SUITE, world.key1, m, now_ms=READER_NOW, max_plaintext=total)
    for ref in m.chunks:
        roomy.feed(ref, snap.new_chunks[ref.id])
    assert roomy.inflated == total
    assert sum(roomy.finish().values()) == 300


def test_the_opener_is_fed_each_needed_chunk_once(world: World) -> None:
    snap = world.snapshot(world.alice, [make_record(world.alice, i) for i in range(5)])
    m = snap.manifest
    ref = m.chunks[0]
    opener = SnapshotOpener(SUITE, world.key1, m, now_ms=READER_NOW)
    opener.feed(ref, snap.new_chunks[ref.id])
    with pytest.raises(InputError, match="exactly once"):
        opener.feed(ref, snap.new_chunks[ref.id])
    stranger = replace(ref, id="0" * 64)
    with pytest.raises(InputError, match="not one"):
        opener.feed(stranger, snap.new_chunks[ref.id])
    assert reason_of(lambda: opener.feed(m.chunks[1], b"\x00" * 40)) == "bad-chunk-id"


def test_the_opener_keeps_the_bucket_key_it_computes_for_each_record(world: World) -> None:
    """The keys a reader stores with pulled rows are the hash of each id computed here,
    one per record returned and in its order; a chunk refused for a record in its
    middle (its clock too far ahead) returns nothing and leaves no keys behind (the
    previous chunk's keys must never be read as this one's: rows would be stored in
    another bucket, and a push would then leave them out of their chunk)."""
    from sealmem.protocol.hlc import MAX_AHEAD_MS, Hlc
    from sealmem.protocol.snapshot import bucket_key

    records = [make_record(world.alice, i) for i in range(300)]
    snap = world.snapshot(world.alice, records)
    m = snap.manifest
    opener = SnapshotOpener(SUITE, world.key1, m, now_ms=READER_NOW)
    for ref in opener.needed:
        got = opener.feed(ref, snap.new_chunks[ref.id])
        assert opener.keys == [bucket_key(SUITE, r.id) for r in got]
        assert {key % m.buckets for key in opener.keys} == {ref.bucket}
    opener.finish()

    # three records of one bucket, the middle one written by a clock two days ahead
    first = records[0]
    bucket = bucket_of(SUITE, first.id, m.buckets)
    same = [r for r in records if bucket_of(SUITE, r.id, m.buckets) == bucket][:3]
    assert len(same) == 3
    ahead = replace(same[1], hlc=Hlc(READER_NOW + MAX_AHEAD_MS + 60_000, 0))
    payload = canonical.encode(
        sorted((r.to_wire() for r in (same[0], ahead, same[2])), key=lambda w: str(w["id"]))
    )
    chunk = encrypt_bucket(world, payload, bucket, writer=world.alice.kid)
    ref = replace(
        next(r for r in m.chunks if r.bucket == bucket),
        id=chunk_id(SUITE, chunk),
        size=len(chunk),
    )
    bent = replace(m, chunks=tuple(ref if r.bucket == bucket else r for r in m.chunks))
    opener = SnapshotOpener(SUITE, world.key1, bent, now_ms=READER_NOW)
    before = next(r for r in opener.needed if r.bucket != bucket)
    opener.feed(before, snap.new_chunks[before.id])
    assert opener.keys
    assert reason_of(lambda: opener.feed(ref, chunk)) == "clock-ahead"
    assert opener.keys == []


def test_who_wrote_the_text_travels_and_an_unknown_source_is_malformed(world: World) -> None:
    """``source`` is carried in the signed, encrypted records; a record of before the
    field (none stated) opens as it was; a value outside the closed set is refused (the
    ``record-source-*`` vectors hold the reader's side)."""
    sources = (None, "person", "agent", "hook", "import")
    records = [replace(make_record(world.alice, i), source=sources[i % 5]) for i in range(10)]
    snap = world.snapshot(world.alice, records)
    opened = open_snapshot(SUITE, world.key1, snap.manifest, snap.new_chunks, now_ms=READER_NOW)
    assert {r.id: r.source for r in opened} == {r.id: r.source for r in records}
    robot = replace(make_record(world.alice, 1), source="robot")
    with pytest.raises(ProtocolError, match="source 'robot' must be one of person, agent"):
        world.snapshot(world.alice, [robot])  # a writer never builds one (readers: vectors)
