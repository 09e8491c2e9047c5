"""Snapshot assembly (DESIGN §5): records -> buckets -> encrypted chunks + manifest.

The layout and the chunk formula: SPEC.md "Buckets" and "Chunks".  Changing one record
rewrites one chunk; a bucket whose plaintext did not change keeps its chunk.  The
caller keeps the per-bucket plaintext digests (:attr:`Snapshot.digests`, local only,
never published) to pass back next time.  Opening chunks: :mod:`sealmem.protocol.chunks`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from . import canonical
from .errors import InputError
from .manifest import ChunkRef, Head, Manifest
from .record import Record
from .suite import ContentKeyLike, RandomSource, Signer, Suite

__all__ = [
    "BUCKET_KEYS",
    "DELTA_SHARE",
    "FULL_EVERY",
    "MAX_SNAPSHOT_BUCKETS",
    "MIN_BUCKETS",
    "NONCE_SIZE",
    "PRIVATE_SNAPSHOT_FORMAT",
    "RECORDS_PER_BUCKET",
    "SNAPSHOT_FORMAT",
    "PreviousSnapshot",
    "Rebuild",
    "Snapshot",
    "bucket_count",
    "bucket_key",
    "bucket_of",
    "build_snapshot",
    "chunk_ad",
    "chunk_id",
    "listed_against",
]

SNAPSHOT_FORMAT = "sealmem/snapshot/v1"
PRIVATE_SNAPSHOT_FORMAT = "sealmem/private-snapshot/v1"
MIN_BUCKETS = 64
MAX_SNAPSHOT_BUCKETS = 1024
RECORDS_PER_BUCKET = 64
NONCE_SIZE = 24
_ZLIB_LEVEL = 3  # measured: tests/bench/bench_push.py (zlib levels)


def bucket_count(records: int, previous: int | None = None) -> int:
    """A power of two in ``MIN_BUCKETS..MAX_SNAPSHOT_BUCKETS``, about one per 64 records.

    A ``previous`` count is kept while it stays within 4x of the ideal, so a
    store that grows by a few records does not rewrite every chunk.
    """
    ideal = MIN_BUCKETS
    while ideal < MAX_SNAPSHOT_BUCKETS and ideal * RECORDS_PER_BUCKET < records:
        ideal *= 2
    if (
        previous is not None
        and MIN_BUCKETS <= previous <= MAX_SNAPSHOT_BUCKETS
        and previous & (previous - 1) == 0
        and ideal // 4 <= previous <= ideal * 4
    ):
        return previous
    return ideal


def bucket_of(suite: Suite, record_id: str, buckets: int) -> int:
    """The bucket of ``record_id``: BLAKE2b of a domain-separated id, mod ``buckets``."""
    digest = suite.blake2b(b"sealmem/v1/bucket\x00" + record_id.encode("utf-8"), size=8)
    return int.from_bytes(digest, "big") % buckets


BUCKET_KEYS = 1 << 16
"""How many bucket keys there are: every bucket count a writer uses divides it."""


def bucket_key(suite: Suite, record_id: str) -> int:
    """The bucket hash of ``record_id`` mod :data:`BUCKET_KEYS`, for a store to keep:
    ``bucket_key(...) % buckets == bucket_of(..., buckets)`` for every power-of-two
    ``buckets`` up to :data:`BUCKET_KEYS`."""
    return bucket_of(suite, record_id, BUCKET_KEYS)


def chunk_ad(
    team: str, project: str, writer: str, epoch: int, bucket: int, *, private: bool = False
) -> bytes:
    """The associated data that binds a chunk to its place (and to its kind: a private
    chunk never opens as a team chunk, nor the reverse)."""
    return canonical.encode(
        {
            "format": PRIVATE_SNAPSHOT_FORMAT if private else SNAPSHOT_FORMAT,
            "team": team,
            "project": project,
            "writer": writer,
            "epoch": epoch,
            "bucket": bucket,
        }
    )


def chunk_id(suite: Suite, chunk: bytes) -> str:
    return suite.blake2b(chunk, size=32).hex()


def _digest(suite: Suite, plaintext: bytes) -> str:
    return suite.blake2b(b"sealmem/v1/hash/bucket\x00" + plaintext, size=32).hex()


FULL_EVERY = 64
"""A delta manifest lists its changes against a full one at most this many seqs back."""
DELTA_SHARE = 8
"""A delta lists at most 1/DELTA_SHARE of the buckets as changed or removed."""


def listed_against(suite: Suite, built: Manifest, listing: tuple[Manifest, str] | None) -> Manifest:
    """``built`` as its writer publishes it: a delta against the full manifest ``listing``
    (manifest, object hash) of the same chain, or (returned as is) a full manifest, when
    SPEC.md "Delta manifests" says a writer publishes a full one."""
    if listing is None or built.prev is None:
        return built
    base, base_hash = listing
    if (
        base.delta is not None
        or not base.complete
        or (base.team, base.project, base.writer, base.private)
        != (built.team, built.project, built.writer, built.private)
        or (base.epoch, base.buckets) != (built.epoch, built.buckets)
        or not 0 < built.seq - base.seq < FULL_EVERY
    ):
        return built
    delta = built.against(suite, base, base_hash)
    listed = delta.delta
    if listed is None or (len(listed.changed) + len(listed.removed)) * DELTA_SHARE > built.buckets:
        return built
    return delta


@dataclass(frozen=True, slots=True)
class PreviousSnapshot:
    """What the writer kept from its last snapshot, to reuse unchanged chunks."""

    manifest: Manifest
    digests: Mapping[int, str]  # bucket -> plaintext digest


@dataclass(frozen=True, slots=True)
class Rebuild:
    """Which buckets of the previous snapshot to build again (:func:`build_snapshot`'s
    ``only``): the rest keep their chunks.  ``records`` is the new snapshot's total."""

    buckets: frozenset[int]
    buckets_total: int  # the bucket count, the previous snapshot's
    records: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    manifest: Manifest
    envelope: bytes  # the signed manifest, as published
    new_chunks: Mapping[str, bytes]  # chunk id -> bytes, only chunks not already published
    digests: Mapping[int, str]  # keep locally; pass back as PreviousSnapshot.digests
    hash: str | None = None  # the manifest's object hash (None: not computed)

    def chunk_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.manifest.chunks)


def build_snapshot(
    suite: Suite,
    key: ContentKeyLike,
    signer: Signer,
    *,
    team: str,
    project: str,
    epoch: int,
    roster_version: int,
    seq: int,
    prev: str | None,
    records: Iterable[Record],
    random: RandomSource,
    heads: Iterable[Head] = (),
    created_at: int = 0,
    previous: PreviousSnapshot | None = None,
    only: Rebuild | None = None,
    listing: tuple[Manifest, str] | None = None,
    private: bool = False,
) -> Snapshot:
    """Bucket, compress, pad, encrypt and sign ``records`` (all written by ``signer``).

    With ``only`` (a :class:`Rebuild` of ``previous``), ``records`` are the records of
    the buckets in ``only.buckets`` alone, and every other bucket keeps its chunk and
    digest from ``previous`` unread: the snapshot equals the one built from all the
    records, provided no bucket outside ``only.buckets`` changed since ``previous``.
    With ``listing``, the manifest may be published as a delta (:func:`listed_against`).
    ``private``: a private chain's snapshot (private records, under the member key).
    """
    writer = signer.kid
    by_id = _checked(records, writer, project, "private" if private else "team")
    old = previous  # its chunks are reusable only in the same chain and epoch
    if old is not None:
        m = old.manifest
        if (m.team, m.project, m.writer, m.epoch, m.private) != (
            team, project, writer, epoch, private
        ):  # fmt: skip
            old = None
    buckets, total = _layout(old, only, len(by_id))
    if old is not None and buckets != old.manifest.buckets:
        old = None
    grouped: dict[int, list[Record]] = {}
    for rid in sorted(by_id):
        grouped.setdefault(bucket_of(suite, rid, buckets), []).append(by_id[rid])
    old_refs = {c.bucket: c for c in old.manifest.chunks} if old is not None else {}
    old_digests = old.digests if old is not None else {}
    refs: list[ChunkRef] = []
    new_chunks: dict[str, bytes] = {}
    digests: dict[int, str] = {}
    if only is not None:
        refs, digests = _kept(only, grouped, old_refs, old_digests, total, len(by_id))
    for bucket in sorted(grouped):
        plaintext = canonical.encode([r.to_wire() for r in grouped[bucket]])
        digest = digests[bucket] = _digest(suite, plaintext)
        ref = old_refs.get(bucket)
        if ref is not None and old_digests.get(bucket) == digest:
            refs.append(ref)
            continue
        padded = suite.pad(zlib.compress(plaintext, _ZLIB_LEVEL))
        ad = chunk_ad(team, project, writer, epoch, bucket, private=private)
        chunk = key.encrypt(padded, ad, nonce=random(NONCE_SIZE))
        cid = chunk_id(suite, chunk)
        new_chunks[cid] = chunk
        refs.append(ChunkRef(bucket, cid, len(chunk)))
    refs.sort(key=lambda ref: ref.bucket)
    manifest = Manifest(
        team=team, project=project, writer=writer, seq=seq, prev=prev, epoch=epoch,
        roster_version=roster_version, buckets=buckets, chunks=tuple(refs), records=total,
        heads=tuple(sorted(heads, key=lambda h: (h.writer, h.project))), created_at=created_at,
        private=private,
    )  # fmt: skip
    manifest = listed_against(suite, manifest, listing)
    envelope, digest = manifest.sign_and_hash(suite, signer)
    return Snapshot(manifest, envelope, new_chunks, digests, digest)


def _checked(
    records: Iterable[Record], writer: str, project: str, visibility: str
) -> dict[str, Record]:
    """``records`` by id, each validated: ``visibility`` records of ``project`` edited by
    ``writer``."""
    by_id: dict[str, Record] = {}
    for rec in records:
        if rec.editor != writer or rec.project != project or rec.visibility != visibility:
            raise InputError(
                f"record {rec.id} cannot go into {writer}'s snapshot of {project!r}: "
                f"a snapshot carries only {visibility} records of its project edited by "
                "its writer"
            )
        if rec.id in by_id:
            raise InputError(f"record {rec.id} appears twice; pass one version per id")
        by_id[rec.id] = rec.validate()
    return by_id


def _layout(old: PreviousSnapshot | None, only: Rebuild | None, count: int) -> tuple[int, int]:
    """(bucket count, record total) of the new snapshot: a partial rebuild keeps those of
    ``old`` (reusable, or refused); a full build sizes the buckets for ``count`` records."""
    old_buckets = None if old is None else old.manifest.buckets
    if only is None:
        return bucket_count(count, old_buckets), count
    if old is None or only.buckets_total != old_buckets:
        raise InputError(
            "a partial rebuild needs the previous snapshot of the same writer, project, "
            "epoch and bucket count; build from every record instead"
        )
    return old.manifest.buckets, only.records


def _kept(
    only: Rebuild,
    grouped: Mapping[int, list[Record]],
    old_refs: Mapping[int, ChunkRef],
    old_digests: Mapping[int, str],
    total: int,
    count: int,
) -> tuple[list[ChunkRef], dict[int, str]]:
    """The refs and digests a partial rebuild keeps from the previous snapshot unread:
    those of every bucket outside ``only.buckets``."""
    stray = set(grouped) - only.buckets
    if stray:
        raise InputError(
            f"records of bucket {min(stray)} were passed to a rebuild of buckets "
            f"{sorted(only.buckets)[:8]}: pass the records of the rebuilt buckets only"
        )
    if total < count:
        raise InputError(f"a snapshot of {total} records cannot hold {count} rebuilt ones")
    refs: list[ChunkRef] = []
    digests: dict[int, str] = {}
    for bucket, ref in old_refs.items():
        if bucket in only.buckets:
            continue
        if bucket not in old_digests:
            raise InputError(f"bucket {bucket} is kept but its digest is unknown; rebuild it")
        refs.append(ref)
        digests[bucket] = old_digests[bucket]
    return refs, digests
