"""Opening snapshot chunks: every check between ciphertext and validated records.

For each chunk the manifest lists, in order: present (``missing-chunk``), hashes
to its id (``bad-chunk-id``), has the listed size (``tampered``), decrypts with
the epoch key and the chunk's associated data (``tampered``), unpads
(``tampered``), decompresses within ``MAX_BUCKET_PLAINTEXT`` (``too-large``;
the zip-bomb guard), is canonical JSON (``not-canonical``), is a list of valid
records sorted by id (``malformed``), each edited by the writer
(``editor-mismatch``), in the manifest's project (``cross-project``) and in the
bucket its id hashes to (``wrong-bucket``), with a clock not too far ahead of the
reader's (``clock-ahead``).  The total must equal the
manifest's record count (``tampered``).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping

from . import canonical, hlc, reasons
from .errors import DecryptionError, ProtocolError, Rejected
from .manifest import MAX_CHUNK_BYTES, ChunkRef, Manifest
from .record import Record
from .snapshot import bucket_of, chunk_ad, chunk_id
from .suite import ContentKeyLike, Suite

__all__ = ["MAX_BUCKET_PLAINTEXT", "decompress", "open_chunk", "open_snapshot"]

MAX_BUCKET_PLAINTEXT = 16 * 1024 * 1024


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


def open_chunk(
    suite: Suite,
    key: ContentKeyLike,
    manifest: Manifest,
    ref: ChunkRef,
    data: bytes,
    *,
    now_ms: int,
) -> list[Record]:
    """Verify, decrypt and decode one chunk of ``manifest``; return its records.

    ``now_ms`` is the reader's clock: a record whose HLC is more than
    :data:`~sealmem.protocol.hlc.MAX_AHEAD_MS` ahead of it is ``clock-ahead``.
    """
    where = f"chunk {ref.id[:16]} (bucket {ref.bucket}) of {manifest.writer}/{manifest.project}"
    if len(data) > MAX_CHUNK_BYTES:
        raise Rejected(reasons.TOO_LARGE, f"{where}: {len(data)} bytes; limit {MAX_CHUNK_BYTES}")
    if chunk_id(suite, data) != ref.id:
        raise Rejected(reasons.BAD_CHUNK_ID, f"{where}: bytes do not hash to the listed id")
    if len(data) != ref.size:
        raise Rejected(reasons.TAMPERED, f"{where}: {len(data)} bytes, manifest says {ref.size}")
    ad = chunk_ad(manifest.team, manifest.project, manifest.writer, manifest.epoch, ref.bucket)
    try:
        padded = key.decrypt(data, ad)
        compressed = suite.unpad(padded)
    except DecryptionError as exc:
        raise Rejected(
            reasons.TAMPERED, f"{where}: does not decrypt under epoch {manifest.epoch}: {exc}"
        ) from exc
    plaintext = decompress(compressed)
    try:
        value = canonical.decode(plaintext)
    except canonical.NonCanonical as exc:
        raise Rejected(reasons.NOT_CANONICAL, f"{where}: {exc}") from exc
    if not isinstance(value, list) or not value:
        raise Rejected(reasons.MALFORMED, f"{where}: must hold a non-empty list of records")
    records: list[Record] = []
    for item in value:
        try:
            rec = Record.from_wire(item)
        except ProtocolError as exc:
            raise Rejected(reasons.MALFORMED, f"{where}: {exc}") from exc
        if records and rec.id <= records[-1].id:
            raise Rejected(reasons.MALFORMED, f"{where}: records not strictly sorted by id")
        if rec.editor != manifest.writer:
            raise Rejected(
                reasons.EDITOR_MISMATCH,
                f"{where}: record {rec.id} was edited by {rec.editor}, not the signer",
            )
        if rec.project != manifest.project:
            raise Rejected(
                reasons.CROSS_PROJECT, f"{where}: record {rec.id} belongs to {rec.project!r}"
            )
        if rec.visibility != "team":
            raise Rejected(reasons.MALFORMED, f"{where}: record {rec.id} is private")
        if hlc.too_far_ahead(rec.hlc, now_ms):
            raise Rejected(
                reasons.CLOCK_AHEAD,
                f"{where}: record {rec.id} has clock {rec.hlc.wall} ms, more than "
                f"{hlc.MAX_AHEAD_MS // 3_600_000} h ahead of this reader's {now_ms} ms; "
                "the writer's clock is wrong (ask them to fix it and sync again)",
            )
        if bucket_of(suite, rec.id, manifest.buckets) != ref.bucket:
            raise Rejected(reasons.WRONG_BUCKET, f"{where}: record {rec.id} is in the wrong bucket")
        records.append(rec)
    return records


def open_snapshot(
    suite: Suite,
    key: ContentKeyLike,
    manifest: Manifest,
    chunks: Mapping[str, bytes],
    *,
    now_ms: int,
) -> list[Record]:
    """Open every chunk of an accepted ``manifest``; all or nothing."""
    out: list[Record] = []
    for ref in manifest.chunks:
        data = chunks.get(ref.id)
        if data is None:
            raise Rejected(
                reasons.MISSING_CHUNK,
                f"chunk {ref.id} of {manifest.writer}/{manifest.project} seq {manifest.seq} "
                "was not supplied; the transport may still be copying it, retry the sync",
            )
        out.extend(open_chunk(suite, key, manifest, ref, data, now_ms=now_ms))
    if len(out) != manifest.records:
        raise Rejected(
            reasons.TAMPERED,
            f"manifest of {manifest.writer}/{manifest.project} seq {manifest.seq} says "
            f"{manifest.records} records, its chunks hold {len(out)}",
        )
    return out
