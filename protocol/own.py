"""Which manifest of ours a push builds on, decided from values (DESIGN §5).

The store records the last manifest this writer published in a project
(:class:`Recorded`).  The transport may hold a newer one of ours: a push that landed
before the store recorded it, or a store restored from a backup.  The push reads ours
back from the transport only when the transport lists a seq above the recorded one
(``Transport.manifests_above``); a copy read back counts only
when our key signed it (:func:`own_manifest`).  A delta is
rebuilt from its base: the full manifest the store keeps, else a copy the transport
holds (:func:`bases_wanted` says which seqs to read).  :func:`ours` turns all of it
into the heads that :func:`~sealmem.protocol.push.plan_push` plans from.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from . import reasons
from .bases import parsed_base, rebuild, rebuild_with
from .envelope import unpack
from .errors import Rejected, StoreError
from .hlc import Hlc
from .manifest import MAX_MANIFEST_BYTES, Manifest, peek
from .push import Landed, OwnHead
from .suite import Suite

__all__ = ["Damage", "Held", "Ours", "Recorded", "bases_wanted", "ours", "own_manifest"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """Our last manifest in a project as the store recorded it (the own chain head)."""

    manifest: bytes  # its envelope
    seq: int
    hash: str
    pushed: Hlc  # the newest HLC published in this chain
    pushed_count: int  # publishable versions (due tombstones included) at that push
    reset_at: int  # roster version of the admin reset this chain answers (0: none)


@dataclass(frozen=True, slots=True)
class Held:
    """What the transport gave back of ours: our newest manifests (newest first; none when
    they were not read), and the copies it holds of the bases they are listed against."""

    manifests: Sequence[bytes] = ()
    bases: Mapping[int, Sequence[bytes]] = field(default_factory=dict)  # base seq -> copies


@dataclass(frozen=True, slots=True)
class Ours:
    """The heads a push plans from, and a base read from the transport to keep locally."""

    own: OwnHead | None  # the recorded head, a delta rebuilt
    landed: Landed | None  # our newest manifest in the transport, verified under our key
    keep: bytes | None = None  # a full manifest of ours the store should keep as the base
    landed_envelope: bytes | None = None  # the envelope of ``landed`` as the transport held it


@dataclass(frozen=True, slots=True)
class Damage:
    """What the transport lost of our last publication: the chunks missing or damaged there,
    and whether the recorded manifest, or the full one it is listed against, is gone or
    holds other bytes."""

    chunks: frozenset[str] = frozenset()
    manifest: bool = False
    base: bool = False

    def repairs(self, heads: Ours) -> bool:
        """Whether the push publishes the snapshot again (a full manifest, the lost buckets
        encrypted again) even with nothing new.  A lost manifest counts only when no newer
        one of ours landed: the push then builds on that one."""
        if self.chunks:
            return True
        return heads.own is not None and heads.landed is None and (self.manifest or self.base)


def own_manifest(
    suite: Suite, data: bytes, *, writer: str, sign_public: bytes, project: str
) -> Manifest:
    """A manifest of our own read back from a transport (one a push left there before this
    store recorded it, or another device of ours wrote): ``Rejected`` unless ``writer``
    signed it under ``sign_public``, for ``writer`` and ``project``.

    Nothing else needs trust: we wrote it, so its roster, grant and chain are ours to
    continue (a delta still needs its base: :func:`~sealmem.protocol.bases.rebuild`)."""
    env = unpack(data, what="manifest", max_bytes=MAX_MANIFEST_BYTES)
    if env.signer != writer:
        raise Rejected(reasons.SIGNER_MISMATCH, f"a manifest of {writer} signed by {env.signer}")
    env.check(suite, "manifest", sign_public)
    m = Manifest.from_body(env.body)
    where = f"manifest {m.writer}/{m.project} seq {m.seq}"
    if m.writer != writer:
        raise Rejected(reasons.SIGNER_MISMATCH, f"{where} is signed by {writer}")
    if m.project != project:
        raise Rejected(reasons.CROSS_PROJECT, f"{where} was served as one of {project!r}")
    return m


@functools.lru_cache(maxsize=16)
def _peeked(data: bytes) -> Manifest:
    """Our recorded manifest, parsed once per process (it holds one ref per bucket, up to
    1,024, and is read at every sync; a Manifest is immutable)."""
    return peek(data)


@functools.lru_cache(maxsize=16)
def _rebuilt(suite: Suite, data: bytes, base: bytes) -> Manifest:
    """Our recorded manifest, a delta, rebuilt from the base kept here: once per process."""
    found = parsed_base(suite, base)
    return rebuild(suite, _peeked(data), [] if found is None else [found])


def bases_wanted(
    suite: Suite, recorded: Recorded | None, kept: bytes | None, manifests: Sequence[bytes]
) -> frozenset[int]:
    """The seqs of the bases that the recorded manifest and ``manifests`` (ours, read back
    from the transport) are listed against and the ``kept`` base is not: read those from
    the transport.  Nothing is trusted here: a copy that is no base is refused later."""
    found = None if kept is None else parsed_base(suite, kept)
    offered = [] if recorded is None else [_peeked(recorded.manifest)]
    for data in manifests:
        with contextlib.suppress(Rejected):
            offered.append(peek(data))
    return frozenset(
        m.delta.base_seq
        for m in offered
        if m.delta is not None and (found is None or m.delta.base_hash != found[1])
    )


def ours(
    suite: Suite,
    *,
    writer: str,
    project: str,
    sign_public: bytes,
    recorded: Recorded | None,
    kept: bytes | None,
    held: Held,
) -> Ours:
    """The heads of ``writer`` in ``project``: ``landed``, the first of ``held.manifests``
    that our key signed and that rebuilds (one whose base cannot be found is passed over),
    and ``own``, the recorded head with its delta rebuilt (from the kept base, else from
    the transport's copy).  When that base is lost everywhere, the recorded delta is kept
    as parsed only if a newer manifest of ours landed (the push builds on that one);
    otherwise :class:`~sealmem.protocol.errors.StoreError` says to run ``doctor``."""
    landed, keep, envelope = None, None, None
    for data in held.manifests:
        try:
            m = own_manifest(suite, data, writer=writer, sign_public=sign_public, project=project)
            rebuilt, base = rebuild_with(suite, m, kept, _copies(held, m))
        except Rejected:
            continue
        full = None if base is None else (base.manifest, base.hash)
        landed = Landed(rebuilt, m.hash(suite), full)
        keep = base.data if base is not None and base.fetched else None
        envelope = data
        break
    if recorded is None:
        return Ours(None, landed, keep, envelope)
    own, fetched = _own(suite, recorded, kept, held, landed)
    return Ours(own, landed, fetched or keep, envelope)


def _own(
    suite: Suite, recorded: Recorded, kept: bytes | None, held: Held, landed: Landed | None
) -> tuple[OwnHead, bytes | None]:
    """The recorded head, its delta rebuilt, and the base when the transport gave it."""
    m = _peeked(recorded.manifest)
    values = (recorded.hash, recorded.pushed, recorded.pushed_count, recorded.reset_at)
    if m.delta is None:
        return OwnHead(m, *values), None
    if kept is not None and (found := parsed_base(suite, kept)) is not None:
        with contextlib.suppress(Rejected):  # the common case, cached: the base kept here
            return OwnHead(_rebuilt(suite, recorded.manifest, kept), *values, found), None
    try:
        rebuilt, base = rebuild_with(suite, m, None, _copies(held, m))
    except Rejected as exc:
        if landed is not None and landed.manifest.seq > m.seq:
            return OwnHead(m, *values), None  # the push builds on the landed one
        raise StoreError(
            f"our last manifest of {m.project!r} (seq {m.seq}) is a delta whose base this "
            f"store and the transport lost ({exc.detail}); run 'sealmem doctor'"
        ) from exc
    full = None if base is None else (base.manifest, base.hash)
    return OwnHead(rebuilt, *values, full), None if base is None else base.data


def _copies(held: Held, m: Manifest) -> Sequence[bytes]:
    """The transport's copies of the base the delta ``m`` names (none for a full one)."""
    return () if m.delta is None else held.bases.get(m.delta.base_seq, ())
