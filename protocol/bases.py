"""Finding the full manifest a delta manifest is listed against, and rebuilding it.

A delta (``sealmem/manifest/v2``) names its base by seq and object hash, inside its
signed body: a candidate whose body hashes to that is the base, whoever served it, so
its own signature need not be checked again.  Where the candidates come from (the
reader's store, the transport) is the caller's business; they are tried in order and
only as far as needed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

from . import reasons
from .errors import Rejected
from .heads import rebuild_heads
from .manifest import Manifest, chunk_root, peek
from .suite import Suite

__all__ = ["Base", "parse_base", "parsed_base", "rebuild", "rebuild_with", "with_heads"]


def parse_base(suite: Suite, data: bytes) -> tuple[Manifest, str]:
    """A manifest envelope offered as a base: its manifest and object hash (not verified:
    :func:`rebuild` compares the hash with the one the delta signed)."""
    m = peek(data)
    return m, m.hash(suite)


@functools.lru_cache(maxsize=32)
def parsed_base(suite: Suite, data: bytes) -> tuple[Manifest, str] | None:
    """:func:`parse_base`, once per process for the same bytes (a base holds up to one ref
    per bucket, and the same one is offered at every sync); None when it does not parse."""
    try:
        return parse_base(suite, data)
    except Rejected:
        return None


@dataclass(frozen=True, slots=True)
class Base:
    """The full manifest a delta was rebuilt from: parsed, its object hash, its bytes, and
    whether the transport gave it (else the reader kept it)."""

    manifest: Manifest
    hash: str
    data: bytes
    fetched: bool


def rebuild_with(
    suite: Suite, m: Manifest, kept: bytes | None, copies: Sequence[bytes]
) -> tuple[Manifest, Base | None]:
    """``m`` with its whole chunk list (:func:`rebuild`), and the base it was rebuilt from
    (None: ``m`` is full): the ``kept`` one, else the first of the transport's ``copies``
    that is its base (one that does not parse is passed over)."""
    delta = m.delta
    if m.complete or delta is None:
        return m, None
    offered = [(kept, False)] if kept is not None else []
    for data, fetched in [*offered, *((c, True) for c in copies)]:
        found = parsed_base(suite, data)
        if found is not None and found[1] == delta.base_hash:
            return rebuild(suite, m, [found]), Base(*found, data, fetched)
    return rebuild(suite, m, ()), None  # refused: missing-base


def rebuild(suite: Suite, m: Manifest, candidates: Iterable[tuple[Manifest, str]]) -> Manifest:
    """``m`` with its whole chunk list (a v3 delta: and head set): itself when complete,
    else rebuilt from the first candidate (manifest, object hash) that is its base.
    ``missing-base`` when none is; ``tampered`` when the base is not a full manifest of the
    same chain, epoch and bucket count, or the rebuilt list does not hash to the delta's
    ``chunk_root`` (the heads: :func:`~sealmem.protocol.heads.rebuild_heads`)."""
    delta = m.delta
    if m.complete or delta is None:
        return m
    base = next((b for b, digest in candidates if digest == delta.base_hash), None)
    where = f"manifest {m.writer}/{m.project} seq {m.seq}"
    if base is None:
        raise Rejected(
            reasons.MISSING_BASE,
            f"{where} lists its chunks against manifest seq {delta.base_seq}, which the "
            "transport no longer holds; nothing of it was kept (its writer publishes a full "
            "manifest within a few syncs; sync again later)",
        )
    if base.delta is not None:
        raise Rejected(reasons.TAMPERED, f"{where}: its base is not a full manifest")
    if (base.team, base.project, base.writer, base.seq, base.private) != (
        m.team, m.project, m.writer, delta.base_seq, m.private,
    ):  # fmt: skip
        raise Rejected(
            reasons.TAMPERED,
            f"{where}: its base is {base.writer}/{base.project} seq {base.seq}, "
            "not an earlier manifest of the same chain",
        )
    if (base.epoch, base.buckets) != (m.epoch, m.buckets):
        raise Rejected(
            reasons.TAMPERED,
            f"{where}: epoch {m.epoch} and {m.buckets} buckets, but its base has "
            f"epoch {base.epoch} and {base.buckets} buckets (a delta keeps both)",
        )
    refs = {c.bucket: c for c in base.chunks}
    for bucket in delta.removed:
        if refs.pop(bucket, None) is None:
            raise Rejected(
                reasons.TAMPERED, f"{where} removes bucket {bucket}, which its base lacks"
            )
    for ref in delta.changed:
        refs[ref.bucket] = ref
    chunks = tuple(refs[b] for b in sorted(refs))
    if chunk_root(suite, chunks) != delta.root:
        raise Rejected(
            reasons.TAMPERED,
            f"{where}: the chunk list rebuilt from its base does not hash to its "
            "chunk_root (the base or the delta is not what the writer signed)",
        )
    if m.records < len(chunks):
        raise Rejected(
            reasons.MALFORMED,
            f"{where}: records {m.records} is fewer than its {len(chunks)} chunks",
        )
    if delta.heads is None:
        return replace(m, chunks=chunks, complete=True)
    heads = rebuild_heads(suite, base.heads, delta.heads, where)
    return replace(m, chunks=chunks, heads=heads, complete=True)


def with_heads(m: Manifest, rebuild: Callable[[Manifest], Manifest] | None, where: str) -> Manifest:
    """The v3 delta ``m`` with the heads (and chunks) of its base put in by ``rebuild``
    (the caller's :func:`rebuild` with the candidates it holds): ``missing-base`` without
    one, ``tampered`` when what it returns is not ``m`` rebuilt."""
    if rebuild is None:
        raise Rejected(
            reasons.MISSING_BASE,
            f"{where} lists its heads against manifest seq {m.delta and m.delta.base_seq}, "
            "which was not supplied; nothing of it was kept (sync again later)",
        )
    whole = rebuild(m)
    if not whole.complete or replace(whole, chunks=(), heads=(), complete=False) != m:
        raise Rejected(reasons.TAMPERED, f"{where}: its rebuild is another manifest")
    return whole
