"""The snapshot manifest (DESIGN §5): a writer's signed index of its chunks.

Fields and rules: SPEC.md "Manifest", "Delta manifests" and "Witness encoding".  Parsed
alone, a delta's :attr:`Manifest.chunks` (a v3 delta's :attr:`Manifest.heads` too) is
empty and :attr:`Manifest.complete` False; :func:`sealmem.protocol.bases.rebuild` with its
base gives the whole list (and head set).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from . import canonical, reasons
from .encoding import (
    HEX_HASH_RE,
    b64e,
    exact_keys,
    need_int,
    need_kid,
    need_list,
    need_str,
    object_hash,
)
from .envelope import unpack
from .errors import InputError, Rejected
from .heads import MAX_HEADS, Head, HeadsDelta, heads_against, parse_heads, parse_heads_delta
from .record import PROJECT_RE
from .roster import TEAM_RE
from .suite import Signer, Suite

__all__ = [
    "DELTA_FORMAT",
    "DELTA_V2_FORMAT",
    "MANIFEST_FORMAT",
    "MAX_BUCKETS",
    "MAX_CHUNK_BYTES",
    "MAX_HEADS",
    "MAX_MANIFEST_BYTES",
    "MAX_RECORDS",
    "PRIVATE_DELTA_FORMAT",
    "PRIVATE_FORMAT",
    "ChunkRef",
    "Delta",
    "Head",
    "Manifest",
    "chunk_root",
    "peek",
]

MANIFEST_FORMAT = "sealmem/manifest/v1"
DELTA_FORMAT = "sealmem/manifest/v3"  # a delta whose heads are listed against its base too
DELTA_V2_FORMAT = "sealmem/manifest/v2"  # a delta with every head (still read, no longer written)
PRIVATE_FORMAT = "sealmem/private-manifest/v1"  # a device's private chain (SPEC "Private
PRIVATE_DELTA_FORMAT = "sealmem/private-manifest/v2"  # memories and trust follow the member")
MAX_BUCKETS = 4096
MAX_CHUNK_BYTES = 8 * 1024 * 1024  # one encrypted, padded chunk
MAX_RECORDS = 1_000_000  # records in one snapshot
MAX_MANIFEST_BYTES = 1024 * 1024  # one signed manifest envelope
_BODY_KEYS = frozenset(
    {
        "format", "team", "project", "writer", "seq", "prev", "epoch", "roster_version",
        "buckets", "chunks", "records", "heads", "created_at",
    }
)  # fmt: skip
_DELTA_KEYS = (_BODY_KEYS - {"chunks"}) | {"base", "changed", "removed", "chunk_root"}
_WITNESS_KEYS = (_DELTA_KEYS - {"heads"}) | {"heads_changed", "heads_removed", "heads_root"}
_FORMATS = {  # format -> (body keys, full, private)
    MANIFEST_FORMAT: (_BODY_KEYS, True, False),
    DELTA_V2_FORMAT: (_DELTA_KEYS, False, False),
    DELTA_FORMAT: (_WITNESS_KEYS, False, False),
    PRIVATE_FORMAT: (_BODY_KEYS, True, True),
    PRIVATE_DELTA_FORMAT: (_DELTA_KEYS, False, True),  # a private delta lists every head
}


def _sealed(body: bytes, signer: Signer) -> bytes:
    """:func:`~sealmem.protocol.envelope.seal` of the manifest body whose canonical bytes are
    ``body``: the envelope's canonical form (keys ``body``, ``sig``, ``signer`` in order;
    base64url and a kid need no escaping) put together without encoding the body again."""
    sig = b64e(signer.sign("manifest", body))
    return (
        b'{"body":'
        + body
        + b',"sig":"'
        + sig.encode()
        + b'","signer":"'
        + signer.kid.encode()
        + b'"}'
    )


def _hash_of(suite: Suite, body: bytes) -> str:
    """:func:`~sealmem.protocol.encoding.object_hash` of a manifest body given its bytes."""
    return suite.blake2b(b"sealmem/v1/hash/manifest\x00" + body, size=32).hex()


def _bad(detail: str) -> Rejected:
    return Rejected(reasons.MALFORMED, f"manifest {detail}")


@dataclass(frozen=True, slots=True)
class ChunkRef:
    bucket: int
    id: str
    size: int

    def to_wire(self) -> dict[str, Any]:
        return {"bucket": self.bucket, "id": self.id, "size": self.size}


def chunk_root(suite: Suite, chunks: tuple[ChunkRef, ...]) -> str:
    """The hash a delta manifest signs over its whole rebuilt chunk list (in bucket order):
    ``hex(BLAKE2b-256(b"sealmem/v1/hash/chunks\\x00" || lines))``, one ASCII line
    ``"{bucket} {id} {size}\\n"`` per ref."""
    lines = "".join([f"{c.bucket} {c.id} {c.size}\n" for c in chunks])
    return suite.blake2b(b"sealmem/v1/hash/chunks\x00" + lines.encode(), size=32).hex()


@dataclass(frozen=True, slots=True)
class Delta:
    """What a delta (``sealmem/manifest/v2``) manifest lists instead of its chunk list."""

    base_seq: int
    base_hash: str  # object hash of the base manifest's body
    changed: tuple[ChunkRef, ...]
    removed: tuple[int, ...]
    root: str  # chunk_root of the rebuilt list
    heads: HeadsDelta | None = None  # set: a v3 delta, its heads listed against the base

    def to_wire(self) -> dict[str, Any]:
        wire = {
            "base": {"seq": self.base_seq, "hash": self.base_hash},
            "changed": [c.to_wire() for c in self.changed],
            "removed": list(self.removed),
            "chunk_root": self.root,
        }
        if self.heads is not None:
            wire.update(self.heads.to_wire())
        return wire


@dataclass(frozen=True, slots=True)
class Manifest:
    team: str
    project: str
    writer: str
    seq: int
    prev: str | None
    epoch: int
    roster_version: int
    buckets: int
    chunks: tuple[ChunkRef, ...]
    records: int
    heads: tuple[Head, ...] = ()
    created_at: int = 0
    delta: Delta | None = None  # set: published as a delta against ``delta.base_*``
    complete: bool = True  # False: a delta parsed alone, ``chunks`` (v3: ``heads``) not rebuilt
    private: bool = False  # a private chain's manifest (epoch: the member keyring's)

    @property
    def heads_known(self) -> bool:
        """Whether :attr:`heads` is the whole witnessed set (a v3 delta parsed alone: not
        until :func:`~sealmem.protocol.bases.rebuild` put its base's heads in)."""
        return self.complete or self.delta is None or self.delta.heads is None

    @property
    def listed(self) -> tuple[ChunkRef, ...]:
        """The chunk refs the body itself names (a delta: its changed ones only)."""
        return self.chunks if self.delta is None else self.delta.changed

    def to_body(self) -> dict[str, Any]:
        delta = self.delta
        if self.private:
            if delta is not None and delta.heads is not None:
                raise InputError("a private delta lists every head (sealmem/private-manifest/v2)")
            fmt = PRIVATE_FORMAT if delta is None else PRIVATE_DELTA_FORMAT
        elif delta is None:
            fmt = MANIFEST_FORMAT
        else:
            fmt = DELTA_V2_FORMAT if delta.heads is None else DELTA_FORMAT
        body: dict[str, Any] = {
            "format": fmt,
            "team": self.team,
            "project": self.project,
            "writer": self.writer,
            "seq": self.seq,
            "prev": self.prev,
            "epoch": self.epoch,
            "roster_version": self.roster_version,
            "buckets": self.buckets,
        }
        if delta is None:
            body["chunks"] = [c.to_wire() for c in self.chunks]
        else:
            body.update(delta.to_wire())
        body["records"] = self.records
        if delta is None or delta.heads is None:
            body["heads"] = [h.to_wire() for h in self.heads]
        body["created_at"] = self.created_at
        return body

    def hash(self, suite: Suite) -> str:
        return object_hash(suite, "manifest", self.to_body())

    def head(self, suite: Suite) -> Head:
        """This manifest's own chain position."""
        return Head(self.writer, self.project, self.seq, self.hash(suite))

    def sign(self, signer: Signer) -> bytes:
        return _sealed(canonical.encode(self.to_body()), signer)

    def sign_and_hash(self, suite: Suite, signer: Signer) -> tuple[bytes, str]:
        """:meth:`sign` and :meth:`hash` from one canonical encoding of the body."""
        body = canonical.encode(self.to_body())
        return _sealed(body, signer), _hash_of(suite, body)

    def against(
        self, suite: Suite, base: Manifest, base_hash: str, *, heads: bool = True
    ) -> Manifest:
        """This (complete) manifest published as a delta against the full ``base``: a v3
        one, its heads listed against the base's too (``heads`` False: a v2 one)."""
        if not self.complete or base.delta is not None or not base.complete:
            raise InputError("a delta lists a complete manifest against a full one")
        old = {c.bucket: c for c in base.chunks}
        new = {c.bucket for c in self.chunks}
        delta = Delta(
            base_seq=base.seq,
            base_hash=base_hash,
            changed=tuple(c for c in self.chunks if old.get(c.bucket) != c),
            removed=tuple(sorted(b for b in old if b not in new)),
            root=chunk_root(suite, self.chunks),
            heads=heads_against(suite, self.heads, base.heads) if heads else None,
        )
        return replace(self, delta=delta)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Manifest:
        """Parse and check a manifest body; raise ``Rejected`` naming the first problem.

        A delta comes back incomplete (:attr:`complete` False): rebuild it from its base
        (:func:`sealmem.protocol.bases.rebuild`)."""
        fmt = body.get("format")
        if not isinstance(fmt, str) or fmt not in _FORMATS:  # (a list or a dict is unhashable)
            raise Rejected(
                reasons.UNKNOWN_FORMAT,
                f"manifest format {fmt!r} is not one of {', '.join(sorted(_FORMATS))}",
            )
        keys, full, private = _FORMATS[fmt]
        obj = exact_keys(body, keys, "manifest")
        buckets = need_int(obj["buckets"], "manifest.buckets", minimum=1)
        if buckets > MAX_BUCKETS or buckets & (buckets - 1):
            raise _bad(f"buckets {buckets} must be a power of two up to {MAX_BUCKETS}")
        records = need_int(obj["records"], "manifest.records")
        if records > MAX_RECORDS:
            raise Rejected(reasons.TOO_LARGE, f"manifest lists {records} records")
        prev = obj["prev"]
        seq = need_int(obj["seq"], "manifest.seq", minimum=1)
        key = "chunks" if full else "changed"
        listed = _chunks(need_list(obj[key], f"manifest.{key}", max_len=buckets), buckets, key)
        order = [c.bucket for c in listed]
        if order != sorted(set(order)):
            raise _bad(f"{key} must be sorted by bucket, one chunk per bucket")
        delta = None if full else _delta(obj, seq, buckets, listed)
        writer = need_kid(obj["writer"], "manifest.writer")
        project = need_str(obj["project"], "manifest.project", pattern=PROJECT_RE)
        if fmt == DELTA_FORMAT and delta is not None:
            delta = replace(delta, heads=parse_heads_delta(obj, (writer, project)))
        manifest = cls(
            team=need_str(obj["team"], "manifest.team", pattern=TEAM_RE),
            project=project,
            writer=writer,
            seq=seq,
            prev=None if prev is None else need_str(prev, "manifest.prev", pattern=HEX_HASH_RE),
            epoch=need_int(obj["epoch"], "manifest.epoch", minimum=1),
            roster_version=need_int(obj["roster_version"], "manifest.roster_version", minimum=1),
            buckets=buckets,
            chunks=listed if full else (),
            records=records,
            heads=() if "heads" not in obj else parse_heads(obj["heads"], (writer, project)),
            created_at=need_int(obj["created_at"], "manifest.created_at"),
            delta=delta,
            complete=full,
            private=private,
        )  # fmt: skip
        if records < len(listed):
            raise _bad(f"records {records} is fewer than its {len(listed)} {key}")
        return manifest


def peek(data: bytes) -> Manifest:
    """The manifest in the envelope ``data``, parsed but not trusted: its form is checked
    (``Rejected`` names the first problem), its signature and its place in a chain are not.

    For what needs no trust (the base a delta names, the chunk ids a manifest lists, our
    own record read back); a reader trusts a teammate's manifest only through
    :func:`~sealmem.protocol.verify.accept_manifest`, a writer its own read back from the
    transport through :func:`~sealmem.protocol.own.own_manifest`."""
    return Manifest.from_body(unpack(data, what="manifest", max_bytes=MAX_MANIFEST_BYTES).body)


def _delta(obj: Mapping[str, Any], seq: int, buckets: int, changed: tuple[ChunkRef, ...]) -> Delta:
    base = exact_keys(obj["base"], {"seq", "hash"}, "manifest.base")
    base_seq = need_int(base["seq"], "manifest.base.seq", minimum=1)
    if base_seq >= seq:
        raise _bad(f"base.seq {base_seq} is not below the manifest's seq {seq}")
    removed = []
    for i, b in enumerate(need_list(obj["removed"], "manifest.removed", max_len=buckets)):
        bucket = need_int(b, f"manifest.removed[{i}]")
        if bucket >= buckets:
            raise _bad(f"removed[{i}] {bucket} is not below the bucket count {buckets}")
        removed.append(bucket)
    if removed != sorted(set(removed)):
        raise _bad("removed must be sorted, each bucket once")
    if not {c.bucket for c in changed}.isdisjoint(removed):
        raise _bad("a bucket is both changed and removed")
    return Delta(
        base_seq=base_seq,
        base_hash=need_str(base["hash"], "manifest.base.hash", pattern=HEX_HASH_RE),
        changed=changed,
        removed=tuple(removed),
        root=need_str(obj["chunk_root"], "manifest.chunk_root", pattern=HEX_HASH_RE),
    )


_CHUNK_KEYS = frozenset({"bucket", "id", "size"})
_HEX_IDS = re.compile(r"(?:[0-9a-f]{64})*")


def _chunks(items: list[Any], buckets: int, key: str = "chunks") -> tuple[ChunkRef, ...]:
    """The chunk list: one pass of plain type checks, and every id matched at once.

    A list the quick checks do not pass goes through :func:`_chunk` item by item,
    which applies the same rules and names the first problem; the quick pass accepts
    only what that one accepts (a chunk list has up to ``MAX_BUCKETS`` refs and is read
    at every sync, so this is most of a manifest's parse)."""
    refs = []
    ids = []
    for c in items:
        if type(c) is not dict or c.keys() != _CHUNK_KEYS:
            break
        bucket, cid, size = c["bucket"], c["id"], c["size"]
        if (
            type(bucket) is not int
            or type(size) is not int
            or type(cid) is not str
            or not 0 <= bucket < buckets
            or not 1 <= size <= MAX_CHUNK_BYTES
            or len(cid) != 64
        ):
            break
        ids.append(cid)
        refs.append(ChunkRef(bucket, cid, size))
    else:
        if _HEX_IDS.fullmatch("".join(ids)) is not None:
            return tuple(refs)
    return tuple(_chunk(c, f"manifest.{key}[{i}]", buckets) for i, c in enumerate(items))


def _chunk(value: object, path: str, buckets: int) -> ChunkRef:
    obj = exact_keys(value, {"bucket", "id", "size"}, path)
    bucket = need_int(obj["bucket"], f"{path}.bucket")
    if bucket >= buckets:
        raise _bad(f"{path}.bucket {bucket} is not below the bucket count {buckets}")
    size = need_int(obj["size"], f"{path}.size", minimum=1)
    if size > MAX_CHUNK_BYTES:
        raise Rejected(reasons.TOO_LARGE, f"{path} is {size} bytes; limit {MAX_CHUNK_BYTES}")
    return ChunkRef(bucket, need_str(obj["id"], f"{path}.id", pattern=HEX_HASH_RE), size)
