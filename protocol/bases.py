"""Finding the full manifest a delta manifest is listed against, and rebuilding it.

A delta (``sealmem/manifest/v2``) names its base by seq and object hash, inside its
signed body: a candidate whose body hashes to that is the base, whoever served it, so
its own signature need not be checked again.  Where the candidates come from (the
reader's store, the transport) is the caller's business; they are tried in order and
only as far as needed.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import reasons
from .envelope import unpack
from .errors import Rejected
from .manifest import Manifest
from .suite import Suite
from .verify import MAX_MANIFEST_BYTES

__all__ = ["parse_base", "rebuild"]


def parse_base(suite: Suite, data: bytes) -> tuple[Manifest, str]:
    """A manifest envelope offered as a base: its manifest and object hash (not verified:
    :func:`rebuild` compares the hash with the one the delta signed)."""
    m = Manifest.from_body(unpack(data, what="manifest", max_bytes=MAX_MANIFEST_BYTES).body)
    return m, m.hash(suite)


def rebuild(suite: Suite, m: Manifest, candidates: Iterable[tuple[Manifest, str]]) -> Manifest:
    """``m`` with its whole chunk list: itself when complete, else rebuilt from the first
    candidate (manifest, object hash) that is its base.  ``missing-base`` when none is;
    ``tampered`` when the base is not a full manifest of the same chain, epoch and bucket
    count, or the rebuilt list does not hash to the delta's ``chunk_root``."""
    delta = m.delta
    if m.complete or delta is None:
        return m
    for base, digest in candidates:
        if digest == delta.base_hash:
            return m.rebuild(suite, base, digest)
    raise Rejected(
        reasons.MISSING_BASE,
        f"manifest {m.writer}/{m.project} seq {m.seq} lists its chunks against manifest seq "
        f"{delta.base_seq}, which the transport no longer holds; nothing of it was kept "
        "(its writer publishes a full manifest within a few syncs; sync again later)",
    )
