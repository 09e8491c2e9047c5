"""Contract: chunks: blob before row, quotas, orphans, expiry, revoked writers, scrub."""

from __future__ import annotations

import time

import pytest

from sealmem.hub.storage import (
    TEAM_OWNER,
    BlobKey,
    KeyringBlob,
    Quota,
    QuotaExceeded,
    ScrubReport,
    Storage,
)

from .conftest import Backend
from .world import ALICE, BOB, PROJECT, T0, chunk, cid, manifest, roster, team, verify


def _blobs(store: Storage) -> set[BlobKey]:
    return {e.key for e in store.blobs.entries()}


def test_a_chunk_is_stored_once_and_read_back(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    assert store.put_chunk("t1", PROJECT, ALICE, a, b"one", T0) is False
    assert store.chunk("t1", PROJECT, ALICE, a) == b"one"
    assert store.chunk("t1", PROJECT, BOB, a) is None
    assert store.missing_chunks("t1", PROJECT, ALICE, [a, "f" * 64]) == ["f" * 64]
    assert store.member_usage("t1", ALICE) == 3
    assert _blobs(store) == {BlobKey("t1", PROJECT, ALICE, a)}


def test_the_data_quota_stops_short_of_the_reserve(storage_backend: Backend) -> None:
    store = storage_backend.open(Quota(team_bytes=1000, reserve_bytes=300))
    team(store, "t1")  # a control object: counted, allowed into the reserve
    used = store.usage("t1")
    room = 700 - used
    chunk(store, "t1", ALICE, b"x" * room)
    with pytest.raises(QuotaExceeded):
        chunk(store, "t1", ALICE, b"y")
    with pytest.raises(QuotaExceeded):
        manifest(store, "t1", ALICE, 1, [])  # a manifest is data too
    assert len(_blobs(store)) == 1  # the refused chunk left no blob behind
    roster(store, "t1", 2)  # a roster (a revocation) still fits: the reserve is for it
    with store.write("t1") as tx:
        tx.put_keyring(KeyringBlob(PROJECT, 1, b"k" * 200, 2), T0)
    with pytest.raises(QuotaExceeded), store.write("t1") as tx:
        tx.put_keyring(KeyringBlob(PROJECT, 2, b"k" * 300, 2), T0)  # past the whole quota
    assert store.usage("t1") <= 1000


def test_one_member_cannot_take_the_whole_team_quota(storage_backend: Backend) -> None:
    store = storage_backend.open(Quota(team_bytes=10_000, reserve_bytes=0, member_bytes=100))
    team(store, "t1")
    chunk(store, "t1", ALICE, b"a" * 100)
    with pytest.raises(QuotaExceeded) as caught:
        chunk(store, "t1", ALICE, b"b")
    assert ALICE in str(caught.value)
    chunk(store, "t1", BOB, b"b" * 100)  # bob has his own share
    assert store.member_usage("t1", ALICE) == store.member_usage("t1", BOB) == 100
    assert store.member_usage("t1", TEAM_OWNER) == store.usage("t1") - 200


def test_usage_goes_down_when_chunks_go(store: Storage) -> None:
    team(store, "t1")
    base = store.usage("t1")
    a = chunk(store, "t1", ALICE, b"a" * 50)
    chunk(store, "t1", ALICE, b"b" * 70)
    assert store.collect("t1", PROJECT, ALICE, {a}, T0 + 1) == 1
    assert store.usage("t1") == base + 50
    assert store.member_usage("t1", ALICE) == 50


@pytest.mark.slow
def test_orphan_blobs_are_collected_only_past_the_minimum_age(store: Storage) -> None:
    team(store, "t1")
    named = chunk(store, "t1", ALICE, b"named")
    orphan = BlobKey("t1", PROJECT, ALICE, cid(b"orphan"))
    store.blobs.put(orphan, b"orphan")  # a put in flight: blob durable, row not yet committed
    assert store.collect_orphans(3600) == 0
    assert orphan in _blobs(store)
    time.sleep(1.2)
    assert store.collect_orphans(1.0) == 1
    assert _blobs(store) == {BlobKey("t1", PROJECT, ALICE, named)}


def test_putting_a_chunk_again_refreshes_it(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one", now=T0)
    store.put_chunk("t1", PROJECT, ALICE, a, b"one", T0 + 10_000)
    assert store.expire_unreferenced(T0 + 5_000) == 0  # refreshed at T0+10s
    assert store.expire_unreferenced(T0 + 10_001) == 1


def test_unreferenced_chunks_expire_and_referenced_ones_stay(store: Storage) -> None:
    team(store, "t1")
    kept = chunk(store, "t1", ALICE, b"kept")
    stray = chunk(store, "t1", ALICE, b"stray")
    late = chunk(store, "t1", ALICE, b"late", now=T0 + 60_000)
    manifest(store, "t1", ALICE, 1, [kept])
    assert store.expire_unreferenced(T0 + 1) == 1
    assert store.missing_chunks("t1", PROJECT, ALICE, [kept, stray, late]) == [stray]
    assert BlobKey("t1", PROJECT, ALICE, stray) not in _blobs(store)
    assert store.member_usage("t1", ALICE) == len(b"kept") + len(b"late") + len(b"manifest-1")


def test_a_chunk_named_only_by_a_dropped_manifest_becomes_unreferenced(store: Storage) -> None:
    team(store, "t1")
    old = chunk(store, "t1", ALICE, b"old")
    new = chunk(store, "t1", ALICE, b"new")
    manifest(store, "t1", ALICE, 1, [old], keep=1)
    manifest(store, "t1", ALICE, 2, [new], keep=1)
    assert store.expire_unreferenced(T0 + 1) == 1
    assert store.missing_chunks("t1", PROJECT, ALICE, [old, new]) == [old]


def test_a_revoked_writers_unpinned_chunks_are_dropped(store: Storage) -> None:
    team(store, "t1")
    pinned = chunk(store, "t1", ALICE, b"pinned")
    later = chunk(store, "t1", ALICE, b"later")
    stray = chunk(store, "t1", ALICE, b"stray", now=T0 + 999_999)  # young: TTL not reached
    manifest(store, "t1", ALICE, 1, [pinned])
    manifest(store, "t1", ALICE, 2, [pinned, later])
    bobs = chunk(store, "t1", BOB, b"bob's stray")
    with store.write("t1") as tx:
        tx.drop_writer(ALICE, {PROJECT: 1})
    assert store.drop_unreferenced("t1", ALICE) == 2
    assert store.missing_chunks("t1", PROJECT, ALICE, [pinned, later, stray]) == sorted(
        [later, stray]
    )
    assert store.chunk("t1", PROJECT, BOB, bobs) == b"bob's stray"  # others untouched


def test_scrub_drops_damaged_and_missing_chunks_and_a_new_upload_heals(
    store: Storage,
) -> None:
    team(store, "t1")
    good = chunk(store, "t1", ALICE, b"good")
    bad = chunk(store, "t1", ALICE, b"to be damaged")
    gone = chunk(store, "t1", BOB, b"to be lost")
    manifest(store, "t1", ALICE, 1, [good, bad])
    store.blobs.put(BlobKey("t1", PROJECT, ALICE, bad), b"garbage")
    store.blobs.delete(BlobKey("t1", PROJECT, BOB, gone))
    usage = store.usage("t1")

    assert store.scrub(verify) == ScrubReport(checked=3, damaged=1, missing=1)

    assert store.missing_chunks("t1", PROJECT, ALICE, [good, bad]) == [bad]
    assert store.missing_chunks("t1", PROJECT, BOB, [gone]) == [gone]
    assert store.usage("t1") == usage - len(b"to be damaged") - len(b"to be lost")
    assert store.put_chunk("t1", PROJECT, ALICE, bad, b"to be damaged", T0) is True
    assert store.chunk("t1", PROJECT, ALICE, bad) == b"to be damaged"
    assert store.scrub(verify) == ScrubReport(checked=2, damaged=0, missing=0)


def test_putting_a_damaged_chunk_again_repairs_its_blob(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    store.blobs.put(BlobKey("t1", PROJECT, ALICE, a), b"garbage")
    assert store.put_chunk("t1", PROJECT, ALICE, a, b"one", T0) is False
    assert store.chunk("t1", PROJECT, ALICE, a) == b"one"


def test_a_row_whose_blob_is_gone_is_reported_missing(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    store.blobs.delete(BlobKey("t1", PROJECT, ALICE, a))
    assert store.chunk("t1", PROJECT, ALICE, a) is None
    assert store.missing_chunks("t1", PROJECT, ALICE, [a]) == [a]  # the writer uploads it again


def test_collect_never_removes_a_chunk_a_kept_manifest_names(store: Storage) -> None:
    """The keep set a collect is given may be stale: a manifest naming an old chunk may
    commit between the hub reading the kept manifests and the rows going.  The rows
    must be re-checked against the kept manifests inside the deleting transaction."""
    team(store, "t1")
    old = chunk(store, "t1", ALICE, b"old but named again")
    stray = chunk(store, "t1", ALICE, b"stray")
    keep_read_before_the_manifest: set[str] = set()
    manifest(store, "t1", ALICE, 1, [old])  # commits after the keep set was read
    removed = store.collect("t1", PROJECT, ALICE, keep_read_before_the_manifest, T0 + 1)
    assert removed == 1
    assert store.missing_chunks("t1", PROJECT, ALICE, [old, stray]) == [stray]
    assert store.chunk("t1", PROJECT, ALICE, old) == b"old but named again"


def test_join_requests_from_strangers_cannot_take_the_reserve(storage_backend: Backend) -> None:
    """Join requests are posted by anyone: like chunks, they stop short of the reserve
    (else strangers fill the team to the brim and the admin cannot publish a revocation)."""
    store = storage_backend.open(Quota(team_bytes=1000, reserve_bytes=300))
    team(store, "t1")
    chunk(store, "t1", ALICE, b"x" * (650 - store.usage("t1")))
    offer = {"live_after_ms": T0 - 1, "max_pending": 100, "max_per_address": 100}
    store.offer_request("t1", "d" * 26, b"r" * 40, "192.0.2.1", T0, **offer)  # fits
    for n in range(5):
        with pytest.raises(QuotaExceeded):
            store.offer_request("t1", f"{n}" * 26, b"r" * 100, "192.0.2.1", T0, **offer)
    assert store.usage("t1") == 690
    assert [r.kid for r in store.requests("t1")] == ["d" * 26]
    roster(store, "t1", 2)  # the revocation still fits


@pytest.mark.slow
def test_the_orphan_job_leaves_what_is_not_the_hubs_alone(store: Storage) -> None:
    """A bucket (or prefix) shared with other data holds keys of four parts that are
    not chunks: the orphan job must never delete them, whatever their age."""
    team(store, "t1")
    foreign = BlobKey("backups", "2026", "01", "dump.sql")
    store.blobs.put(foreign, b"the operator's backup")
    orphan = BlobKey("t1", PROJECT, ALICE, cid(b"orphan"))
    store.blobs.put(orphan, b"orphan")
    time.sleep(1.2)
    assert store.collect_orphans(1.0) == 1
    assert store.blobs.get(foreign) == b"the operator's backup"
    assert store.blobs.get(orphan) is None
    assert _blobs(store) == set()


def test_a_blobless_row_is_dropped_unless_its_chunk_was_uploaded_again_since(
    store: Storage,
) -> None:
    """A GET finds the row without its blob and leaves the drop for later; if the writer
    uploads the chunk again meanwhile (blob and row, answered 200), the drop keeps the
    row.  Without a new upload the row goes, and the chunk reads as missing."""
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    key = BlobKey("t1", PROJECT, ALICE, a)
    store.blobs.delete(key)
    seen_at = T0 + 1_000
    assert store.chunk_read("t1", PROJECT, ALICE, a) == key  # the row, without its blob
    assert store.put_chunk("t1", PROJECT, ALICE, a, b"one", T0 + 2_000) is False  # again
    store.drop_blobless(key, seen_at)
    assert store.chunk("t1", PROJECT, ALICE, a) == b"one"
    store.blobs.delete(key)
    store.drop_blobless(key, T0 + 3_000)  # found gone again, no upload since
    assert store.chunk_read("t1", PROJECT, ALICE, a) is None
    assert store.member_usage("t1", ALICE) == 0


def test_what_the_hub_lost_marks_its_writers_slot_newest_manifest_first(store: Storage) -> None:
    """A blob gone or damaged behind the hub's back is found by a read or a scrub; its row
    goes, and the ids the slot's kept manifests name without a row are the writer's
    marks (the ``lost`` of its seqs answer), its newest manifest's first."""
    team(store, "t1")
    old = chunk(store, "t1", ALICE, b"only in seq 1")
    kept = chunk(store, "t1", ALICE, b"in both")
    new = chunk(store, "t1", ALICE, b"only in seq 2")
    theirs = chunk(store, "t1", BOB, b"bob's")
    manifest(store, "t1", ALICE, 1, [old, kept])
    manifest(store, "t1", ALICE, 2, [kept, new])
    manifest(store, "t1", BOB, 1, [theirs])
    assert store.lost_chunks("t1", PROJECT, ALICE, 10) == []
    for gone in (old, new, theirs):  # a wiped bucket, behind the hub's back
        store.blobs.delete(BlobKey("t1", PROJECT, ALICE if gone != theirs else BOB, gone))
    store.blobs.put(BlobKey("t1", PROJECT, ALICE, kept), b"rotted")
    assert store.lost_chunks("t1", PROJECT, ALICE, 10) == []  # not found yet

    assert store.chunk("t1", PROJECT, ALICE, new) is None  # a reader's failed read
    assert store.lost_chunks("t1", PROJECT, ALICE, 10) == [new]
    store.scrub(verify)

    assert store.lost_chunks("t1", PROJECT, ALICE, 10) == [*sorted([kept, new]), old]
    assert store.lost_chunks("t1", PROJECT, ALICE, 1) == [min(kept, new)]
    assert store.lost_chunks("t1", PROJECT, BOB, 10) == [theirs]
    assert store.put_chunk("t1", PROJECT, ALICE, new, b"only in seq 2", T0) is True
    assert store.lost_chunks("t1", PROJECT, ALICE, 10) == [kept, old]
