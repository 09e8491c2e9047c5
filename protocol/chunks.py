"""Opening snapshot chunks: every check between ciphertext and validated records.

The checks, in order, and the per-snapshot caps (so that a small upload cannot cost a
reader much): SPEC.md "Chunk rules".  :class:`SnapshotOpener` is fed one chunk at a
time, so a reader merges chunk by chunk with memory bounded by one chunk.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from . import canonical, hlc, reasons
from .errors import DecryptionError, InputError, ProtocolError, Rejected
from .manifest import MAX_CHUNK_BYTES, ChunkRef, Manifest
from .record import Record
from .snapshot import BUCKET_KEYS, bucket_key, bucket_of, chunk_ad, chunk_id
from .suite import ContentKeyLike, Suite

__all__ = [
    "HOLE_REASONS",
    "MAX_BUCKET_PLAINTEXT",
    "MAX_SNAPSHOT_PLAINTEXT",
    "Hole",
    "PartialSnapshot",
    "SnapshotOpener",
    "chunk_slot",
    "decompress",
    "open_chunk",
    "open_snapshot",
    "read_snapshot",
]

MAX_BUCKET_PLAINTEXT = 16 * 1024 * 1024
"""The most one chunk may inflate to (bytes)."""

MAX_SNAPSHOT_PLAINTEXT = 256 * 1024 * 1024
"""The most all the chunks one reader opens for one snapshot may inflate to (bytes)."""

HOLE_REASONS = frozenset({reasons.MISSING_CHUNK, reasons.BAD_CHUNK_ID})
"""Refusals of one chunk that the transport alone can cause (the chunk is not there, or
its bytes are not the ones the signed manifest names): the reader leaves a hole and
merges the rest (SPEC "Partial reads").  Any other refusal of a chunk whose bytes hash
to its signed id is the writer's doing and refuses the whole snapshot."""


@dataclass(frozen=True, slots=True)
class Hole:
    """A chunk of an accepted manifest the reader could not read, and why."""

    ref: ChunkRef
    reason: str  # one of HOLE_REASONS


@dataclass(frozen=True, slots=True)
class PartialSnapshot:
    """What :func:`read_snapshot` read: the records of every chunk that verified, the holes."""

    records: list[Record]
    holes: tuple[Hole, ...]


def decompress(data: bytes, limit: int = MAX_BUCKET_PLAINTEXT) -> bytes:
    """zlib-inflate ``data`` to at most ``limit`` bytes; refuse bombs and truncation."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise Rejected(reasons.TAMPERED, f"chunk does not decompress: {exc}") from exc
    if len(out) > limit or inflater.unconsumed_tail:
        raise Rejected(
            reasons.TOO_LARGE, f"chunk decompresses to more than {limit} bytes (refused)"
        )
    if not inflater.eof or inflater.unused_data:
        raise Rejected(
            reasons.TAMPERED, "chunk's compressed stream is truncated or has trailing data"
        )
    return out


_Opened = tuple[list[Record], int, list[int]]


def _check_bytes(suite: Suite, ref: ChunkRef, data: bytes, where: str) -> None:
    """The transport's bytes are the listed chunk's: its size and id."""
    if len(data) > MAX_CHUNK_BYTES:  # a listed chunk is no larger (Manifest rules): the
        # transport's bytes, not the writer's (a hole, as any bytes not the listed ones)
        raise Rejected(
            reasons.BAD_CHUNK_ID,
            f"{where}: {len(data)} bytes, more than any chunk ({MAX_CHUNK_BYTES}): not the "
            "listed one",
        )
    if chunk_id(suite, data) != ref.id:
        raise Rejected(reasons.BAD_CHUNK_ID, f"{where}: bytes do not hash to the listed id")
    if len(data) != ref.size:
        raise Rejected(reasons.TAMPERED, f"{where}: {len(data)} bytes, manifest says {ref.size}")


def open_chunk(
    suite: Suite,
    key: ContentKeyLike,
    manifest: Manifest,
    ref: ChunkRef,
    data: bytes,
    *,
    now_ms: int,
    limit: int = MAX_BUCKET_PLAINTEXT,
) -> _Opened:
    """Verify, decrypt and decode one chunk of ``manifest``, inflating to at most ``limit``
    bytes: its records, the inflated size, and each record's bucket key
    (:func:`~.snapshot.bucket_key`: the hash the bucket check computes, which a reader
    stores; the bucket is the key mod the power-of-two count).

    ``now_ms`` is the reader's clock: a record whose HLC is more than
    :data:`~sealmem.protocol.hlc.MAX_AHEAD_MS` ahead of it is ``clock-ahead``."""
    where = f"chunk {ref.id[:16]} (bucket {ref.bucket}) of {manifest.writer}/{manifest.project}"
    _check_bytes(suite, ref, data, where)
    m = manifest
    ad = chunk_ad(m.team, m.project, m.writer, m.epoch, ref.bucket, private=m.private)
    visibility = "private" if m.private else "team"
    try:
        padded = key.decrypt(data, ad)
        compressed = suite.unpad(padded)
    except DecryptionError as exc:
        raise Rejected(
            reasons.TAMPERED, f"{where}: does not decrypt under epoch {manifest.epoch}: {exc}"
        ) from exc
    plaintext = decompress(compressed, limit)
    try:
        value = canonical.decode(plaintext)
    except canonical.NonCanonical as exc:
        raise Rejected(reasons.NOT_CANONICAL, f"{where}: {exc}") from exc
    if not isinstance(value, list) or not value:
        raise Rejected(reasons.MALFORMED, f"{where}: must hold a non-empty list of records")
    records: list[Record] = []
    keys: list[int] = []
    buckets = manifest.buckets
    divides = BUCKET_KEYS % buckets == 0  # a parsed manifest's count (a power of two) does
    for item in value:
        try:
            rec = Record.from_wire(item)
        except ProtocolError as exc:
            raise Rejected(reasons.MALFORMED, f"{where}: {exc}") from exc
        if records and rec.id <= records[-1].id:
            raise Rejected(reasons.MALFORMED, f"{where}: records not strictly sorted by id")
        _check_record(rec, manifest, visibility, now_ms, where)
        slot = bucket_key(suite, rec.id)
        bucket = slot % buckets if divides else bucket_of(suite, rec.id, buckets)
        if bucket != ref.bucket:
            raise Rejected(reasons.WRONG_BUCKET, f"{where}: record {rec.id} is in the wrong bucket")
        records.append(rec)
        keys.append(slot)
    return records, len(plaintext), keys


def _check_record(
    rec: Record, manifest: Manifest, visibility: str, now_ms: int, where: str
) -> None:
    """The rules a record of ``manifest``'s chunk answers to alone (Chunk rules)."""
    if rec.editor != manifest.writer:
        raise Rejected(
            reasons.EDITOR_MISMATCH,
            f"{where}: record {rec.id} was edited by {rec.editor}, not the signer",
        )
    if rec.project != manifest.project:
        raise Rejected(
            reasons.CROSS_PROJECT, f"{where}: record {rec.id} belongs to {rec.project!r}"
        )
    if rec.visibility != visibility:
        raise Rejected(
            reasons.MALFORMED, f"{where}: record {rec.id} is {rec.visibility}, not {visibility}"
        )
    if hlc.too_far_ahead(rec.hlc, now_ms):
        raise Rejected(
            reasons.CLOCK_AHEAD,
            f"{where}: record {rec.id} has clock {rec.hlc.wall} ms, more than "
            f"{hlc.MAX_AHEAD_MS // 3_600_000} h ahead of this reader's {now_ms} ms; "
            "the writer's clock is wrong (ask them to fix it and sync again)",
        )


def chunk_slot(manifest: Manifest, ref: ChunkRef) -> str:
    """The chunk cache key of ``ref``: a chunk listed again under the same slot by a later
    manifest of the same writer and project holds the same records."""
    return f"{manifest.epoch}:{manifest.buckets}:{ref.bucket}:{ref.id}"


class SnapshotOpener:
    """Opens the chunks of one accepted manifest incrementally, within per-snapshot budgets.

    ``opened`` is the reader's chunk cache (:func:`chunk_slot` -> record count) from the
    last manifest it merged of the same writer and project: those chunks count towards
    the total unopened.  Feed every chunk of :attr:`needed` once (or pass one whose
    refusal is a hole to :meth:`hole`), then :meth:`finish`.  Once any other
    :class:`Rejected` is raised the snapshot as a whole is refused.
    """

    def __init__(
        self,
        suite: Suite,
        key: ContentKeyLike,
        manifest: Manifest,
        *,
        now_ms: int,
        opened: Mapping[str, int] | None = None,
        max_plaintext: int = MAX_SNAPSHOT_PLAINTEXT,
    ) -> None:
        self.suite = suite
        self.key = key
        self.manifest = manifest
        self.now_ms = now_ms
        self.max_plaintext = max_plaintext
        self.inflated = 0
        self.count = 0
        self.keys: list[int] = []  # bucket keys of the last fed chunk's records, in order
        self._pending: dict[str, ChunkRef] = {}
        self._opened: dict[str, int] = {}
        self._holes: dict[str, Hole] = {}
        cache = opened or {}
        for ref in manifest.chunks:
            slot = chunk_slot(manifest, ref)
            if slot in cache:
                self._opened[slot] = cache[slot]
                self.count += cache[slot]
            else:
                self._pending[slot] = ref
        self._check_count()

    @property
    def needed(self) -> tuple[ChunkRef, ...]:
        return tuple(self._pending.values())

    def _name(self) -> str:
        m = self.manifest
        return f"snapshot {m.writer}/{m.project} seq {m.seq}"

    @property
    def holes(self) -> tuple[Hole, ...]:
        """The chunks left as holes so far (:meth:`hole`), by bucket."""
        return tuple(sorted(self._holes.values(), key=lambda h: h.ref.bucket))

    def hole(self, ref: ChunkRef, exc: Rejected) -> Hole:
        """Leave ``ref`` unread because of ``exc`` when it is one of :data:`HOLE_REASONS`
        (the snapshot is then read in part); re-raise any other refusal."""
        slot = chunk_slot(self.manifest, ref)
        if exc.reason not in HOLE_REASONS or self._pending.get(slot) != ref:
            raise exc
        del self._pending[slot]
        found = self._holes[slot] = Hole(ref, exc.reason)
        return found

    def missing(self, ref: ChunkRef) -> Rejected:
        return Rejected(
            reasons.MISSING_CHUNK,
            f"chunk {ref.id[:16]} of {self._name()} is missing; the transport may still "
            "be copying it, sync again later",
        )

    def _check_count(self) -> None:
        if self.count > self.manifest.records:
            raise Rejected(
                reasons.TAMPERED,
                f"{self._name()}: its chunks hold more than the {self.manifest.records} "
                f"records its manifest says (at least {self.count}); refused before "
                "opening the rest",
            )

    def feed(self, ref: ChunkRef, data: bytes) -> list[Record]:
        slot = chunk_slot(self.manifest, ref)
        if self._pending.get(slot) != ref:
            raise InputError(
                f"chunk {ref.id[:16]} (bucket {ref.bucket}) is not one {self._name()} still "
                "needs; feed each chunk of .needed exactly once"
            )
        room = max(self.max_plaintext - self.inflated, 0)
        limit = min(MAX_BUCKET_PLAINTEXT, room)
        self.keys = []  # a refused chunk leaves none: never the previous chunk's
        try:
            records, size, self.keys = open_chunk(
                self.suite, self.key, self.manifest, ref, data, now_ms=self.now_ms, limit=limit
            )
        except Rejected as exc:
            if exc.reason == reasons.TOO_LARGE and limit < MAX_BUCKET_PLAINTEXT:
                raise Rejected(
                    reasons.TOO_LARGE,
                    f"{self._name()}: its chunks inflate to more than {self.max_plaintext} "
                    "bytes in total (refused; a snapshot that large is a decompression bomb)",
                ) from exc
            raise
        del self._pending[slot]
        self._opened[slot] = len(records)
        self.inflated += size
        self.count += len(records)
        self._check_count()
        return records

    def finish(self) -> dict[str, int]:
        """Check the total; return this manifest's chunk cache (the opened chunks; with
        holes, the total cannot be checked, only that it was not exceeded)."""
        for ref in self._pending.values():
            raise self.missing(ref)
        if not self._holes and self.count != self.manifest.records:
            raise Rejected(
                reasons.TAMPERED,
                f"manifest of {self.manifest.writer}/{self.manifest.project} seq "
                f"{self.manifest.seq} says {self.manifest.records} records, its chunks "
                f"hold {self.count}",
            )
        return dict(self._opened)


def open_snapshot(
    suite: Suite,
    key: ContentKeyLike,
    manifest: Manifest,
    chunks: Mapping[str, bytes],
    *,
    now_ms: int,
) -> list[Record]:
    """Open every chunk of an accepted ``manifest``; all or nothing (:class:`SnapshotOpener`)."""
    opener = SnapshotOpener(suite, key, manifest, now_ms=now_ms)
    out: list[Record] = []
    for ref in opener.needed:
        data = chunks.get(ref.id)
        if data is None:
            raise opener.missing(ref)
        out.extend(opener.feed(ref, data))
    opener.finish()
    return out


def read_snapshot(
    suite: Suite,
    key: ContentKeyLike,
    manifest: Manifest,
    chunks: Mapping[str, bytes],
    *,
    now_ms: int,
) -> PartialSnapshot:
    """Open every chunk of an accepted ``manifest`` that verifies: a chunk missing from
    ``chunks`` or whose bytes do not hash to its id is a hole; any other refusal refuses
    the snapshot (SPEC "Partial reads")."""
    opener = SnapshotOpener(suite, key, manifest, now_ms=now_ms)
    out: list[Record] = []
    for ref in opener.needed:
        data = chunks.get(ref.id)
        try:
            if data is None:
                raise opener.missing(ref)
            out.extend(opener.feed(ref, data))
        except Rejected as exc:
            opener.hole(ref, exc)
    opener.finish()
    return PartialSnapshot(out, opener.holes)
