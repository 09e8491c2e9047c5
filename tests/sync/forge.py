"""Hostile snapshots published by a real key holder: chunk plaintexts of the test's choosing.

A member holds its signing key and the project's content key, so it can put
anything inside chunks that verify and decrypt: more records than its manifest
says, bytes that are not what ``canonical.encode`` would write, and so on.
:func:`publish` encrypts the given bucket plaintexts exactly as
``build_snapshot`` does, signs a manifest that says what the test wants, and
pushes both through the member's real transport.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from itertools import count
from typing import Protocol

from sealmem.client.sync.session import Team
from sealmem.crypto import SUITE, MemberKey, random_bytes
from sealmem.protocol import canonical
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.manifest import ChunkRef, Head, Manifest
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.snapshot import MIN_BUCKETS, bucket_of, chunk_ad, chunk_id

from .conftest import PROJECT


class Node(Protocol):
    """A member as the tests hold one (a folder's or a hub's): its key, team and clock."""

    @property
    def key(self) -> MemberKey: ...

    @property
    def t(self) -> Team: ...

    def clock(self) -> int: ...


__all__ = ["BUCKETS", "bucket_plaintext", "publish", "records_by_bucket"]

BUCKETS = MIN_BUCKETS


def records_by_bucket(
    node: Node, buckets: Iterable[int], per_bucket: int, content: str
) -> dict[int, list[Record]]:
    """``per_bucket`` valid records by ``node`` in each of ``buckets`` (ids chosen to fit)."""
    want = set(buckets)
    out: dict[int, list[Record]] = {b: [] for b in want}
    now = node.clock()
    for i in count():
        if all(len(out[b]) >= per_bucket for b in want):
            break
        rid = new_memory_id(now, i.to_bytes(10, "big"))
        bucket = bucket_of(SUITE, rid, BUCKETS)
        if bucket in want and len(out[bucket]) < per_bucket:
            record = Record(
                id=rid, project=PROJECT, kind="note", content=content, keywords=("forged",),
                importance=0.5, author=node.key.kid, editor=node.key.kid, created_at=now,
                hlc=Hlc(now, i % 60_000),
            )  # fmt: skip
            out[bucket].append(record)
    return {b: sorted(rs, key=lambda r: r.id) for b, rs in out.items()}


def bucket_plaintext(records: Iterable[Record]) -> bytes:
    return canonical.encode([r.to_wire() for r in records])


def publish(
    node: Node,
    plaintexts: Mapping[int, bytes],
    *,
    records: int,
    seq: int = 1,
    heads: tuple[Head, ...] = (),
    roster_version: int | None = None,
) -> Manifest:
    """Encrypt ``plaintexts`` (bucket -> bytes) as ``node``'s chunks and push a manifest
    claiming ``records`` records (seq ``seq``, no previous manifest) that witnesses
    ``heads`` and cites ``roster_version`` (default: the trusted roster's)."""
    team = node.t
    assert (
        team.refresh(team.trusted(), node.clock())[1] == []
    )  # trust the newest roster and keyrings
    roster = team.roster()
    epoch = roster.projects[PROJECT]
    key = team.content_key(team.trusted(), PROJECT, epoch)
    assert key is not None
    refs: list[ChunkRef] = []
    chunks: dict[str, bytes] = {}
    for bucket in sorted(plaintexts):
        ad = chunk_ad(team.config.team, PROJECT, node.key.kid, epoch, bucket)
        padded = SUITE.pad(zlib.compress(plaintexts[bucket], 9))
        chunk = key.encrypt(padded, ad, nonce=random_bytes(24))
        cid = chunk_id(SUITE, chunk)
        chunks[cid] = chunk
        refs.append(ChunkRef(bucket, cid, len(chunk)))
    manifest = Manifest(
        team=team.config.team, project=PROJECT, writer=node.key.kid, seq=seq, prev=None,
        epoch=epoch, roster_version=roster_version or roster.version, buckets=BUCKETS,
        chunks=tuple(refs),
        records=records, heads=heads, created_at=node.clock(),
    )  # fmt: skip
    team.transport.push(PROJECT, node.key.kid, seq, manifest.sign(node.key), chunks)
    return manifest
