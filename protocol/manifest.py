"""The snapshot manifest (DESIGN §5): a writer's signed index of its chunks.

Body (context ``manifest``, signed by ``writer``)::

    format          "sealmem/manifest/v1"
    team, project   ids
    writer          kid of the signer
    seq             >= 1, strictly increasing per (writer, project); gaps allowed
    prev            object hash of the previous manifest body, or null (first / reset)
    epoch           content-key epoch the chunks are encrypted under
    roster_version  roster the writer trusted when writing
    buckets         bucket count (a power of two)
    chunks          [{bucket, id, size}]  one per non-empty bucket, sorted by bucket
    records         total record count
    heads           [{writer, project, seq, hash}]  what this writer accepted from others
    created_at      ms (informational)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
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
from .errors import Rejected
from .record import PROJECT_RE
from .roster import TEAM_RE
from .suite import Signer, Suite

__all__ = [
    "MANIFEST_FORMAT",
    "MAX_BUCKETS",
    "MAX_CHUNK_BYTES",
    "MAX_HEADS",
    "MAX_RECORDS",
    "ChunkRef",
    "Head",
    "Manifest",
]

MANIFEST_FORMAT = "sealmem/manifest/v1"
MAX_BUCKETS = 4096
MAX_CHUNK_BYTES = 8 * 1024 * 1024  # one encrypted, padded chunk
MAX_RECORDS = 1_000_000  # records in one snapshot
MAX_HEADS = 16384
_BODY_KEYS = frozenset(
    {
        "format", "team", "project", "writer", "seq", "prev", "epoch", "roster_version",
        "buckets", "chunks", "records", "heads", "created_at",
    }
)  # fmt: skip


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


@dataclass(frozen=True, slots=True)
class Head:
    """A (writer, project) chain position: the last accepted ``seq`` and manifest hash."""

    writer: str
    project: str
    seq: int
    hash: str

    def to_wire(self) -> dict[str, Any]:
        return {"writer": self.writer, "project": self.project, "seq": self.seq, "hash": self.hash}


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

    def to_body(self) -> dict[str, Any]:
        return {
            "format": MANIFEST_FORMAT,
            "team": self.team,
            "project": self.project,
            "writer": self.writer,
            "seq": self.seq,
            "prev": self.prev,
            "epoch": self.epoch,
            "roster_version": self.roster_version,
            "buckets": self.buckets,
            "chunks": [c.to_wire() for c in self.chunks],
            "records": self.records,
            "heads": [h.to_wire() for h in self.heads],
            "created_at": self.created_at,
        }

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

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Manifest:
        """Parse and check a manifest body; raise ``Rejected`` naming the first problem."""
        if body.get("format") != MANIFEST_FORMAT:
            raise Rejected(
                reasons.UNKNOWN_FORMAT,
                f"manifest format {body.get('format')!r} is not {MANIFEST_FORMAT!r}",
            )
        obj = exact_keys(body, _BODY_KEYS, "manifest")
        buckets = need_int(obj["buckets"], "manifest.buckets", minimum=1)
        if buckets > MAX_BUCKETS or buckets & (buckets - 1):
            raise _bad(f"buckets {buckets} must be a power of two up to {MAX_BUCKETS}")
        records = need_int(obj["records"], "manifest.records")
        if records > MAX_RECORDS:
            raise Rejected(reasons.TOO_LARGE, f"manifest lists {records} records")
        prev = obj["prev"]
        manifest = cls(
            team=need_str(obj["team"], "manifest.team", pattern=TEAM_RE),
            project=need_str(obj["project"], "manifest.project", pattern=PROJECT_RE),
            writer=need_kid(obj["writer"], "manifest.writer"),
            seq=need_int(obj["seq"], "manifest.seq", minimum=1),
            prev=None if prev is None else need_str(prev, "manifest.prev", pattern=HEX_HASH_RE),
            epoch=need_int(obj["epoch"], "manifest.epoch", minimum=1),
            roster_version=need_int(obj["roster_version"], "manifest.roster_version", minimum=1),
            buckets=buckets,
            chunks=_chunks(need_list(obj["chunks"], "manifest.chunks", max_len=buckets), buckets),
            records=records,
            heads=tuple(
                _head(h, f"manifest.heads[{i}]")
                for i, h in enumerate(need_list(obj["heads"], "manifest.heads", max_len=MAX_HEADS))
            ),
            created_at=need_int(obj["created_at"], "manifest.created_at"),
        )  # fmt: skip
        order = [c.bucket for c in manifest.chunks]
        if order != sorted(set(order)):
            raise _bad("chunks must be sorted by bucket, one chunk per bucket")
        if records < len(manifest.chunks):
            raise _bad(f"records {records} is fewer than its {len(manifest.chunks)} chunks")
        keys = [(h.writer, h.project) for h in manifest.heads]
        if len(set(keys)) != len(keys) or (manifest.writer, manifest.project) in keys:
            raise _bad("heads must name each (writer, project) once, and not the manifest's own")
        return manifest


_CHUNK_KEYS = frozenset({"bucket", "id", "size"})
_HEX_IDS = re.compile(r"(?:[0-9a-f]{64})*")


def _chunks(items: list[Any], buckets: int) -> tuple[ChunkRef, ...]:
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
    return tuple(_chunk(c, f"manifest.chunks[{i}]", buckets) for i, c in enumerate(items))


def _chunk(value: object, path: str, buckets: int) -> ChunkRef:
    obj = exact_keys(value, {"bucket", "id", "size"}, path)
    bucket = need_int(obj["bucket"], f"{path}.bucket")
    if bucket >= buckets:
        raise _bad(f"{path}.bucket {bucket} is not below the bucket count {buckets}")
    size = need_int(obj["size"], f"{path}.size", minimum=1)
    if size > MAX_CHUNK_BYTES:
        raise Rejected(reasons.TOO_LARGE, f"{path} is {size} bytes; limit {MAX_CHUNK_BYTES}")
    return ChunkRef(bucket, need_str(obj["id"], f"{path}.id", pattern=HEX_HASH_RE), size)


def _head(value: object, path: str) -> Head:
    obj = exact_keys(value, {"writer", "project", "seq", "hash"}, path)
    return Head(
        writer=need_kid(obj["writer"], f"{path}.writer"),
        project=need_str(obj["project"], f"{path}.project", pattern=PROJECT_RE),
        seq=need_int(obj["seq"], f"{path}.seq", minimum=1),
        hash=need_str(obj["hash"], f"{path}.hash", pattern=HEX_HASH_RE),
    )
