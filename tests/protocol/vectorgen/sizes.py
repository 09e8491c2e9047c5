"""Vectors for the size limits (SPEC.md "Limits", "Chunk rules"): every envelope one byte
over the limit of its kind, and a snapshot whose chunks inflate to more than
``MAX_SNAPSHOT_PLAINTEXT`` in total, each refused ``too-large``.

An envelope over its limit is megabytes, so it is given as ``data_zlib`` (the object's
bytes, zlib-compressed; SPEC "Test vectors").  Each is shaped as an envelope (canonical
JSON with ``body``, ``signer`` and a 64-byte ``sig``), so that only its size refuses it.
The nonces here are derived from the case, not drawn from the generator's sequence: the
other vectors stay as they were.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import replace
from typing import Any

from sealmem.crypto import SUITE
from sealmem.protocol import canonical
from sealmem.protocol.checkpoint import MAX_CHECKPOINT_BYTES
from sealmem.protocol.chunks import MAX_BUCKET_PLAINTEXT, MAX_SNAPSHOT_PLAINTEXT
from sealmem.protocol.device_invite import MAX_DEVICE_INVITE_BYTES, MAX_DEVICE_JOIN_BYTES
from sealmem.protocol.encoding import b64e
from sealmem.protocol.invite import MAX_JOIN_BYTES
from sealmem.protocol.keyring import MAX_KEYRING_BYTES
from sealmem.protocol.manifest import MAX_MANIFEST_BYTES, ChunkRef, Manifest
from sealmem.protocol.snapshot import bucket_of, chunk_ad, chunk_id
from sealmem.protocol.verify import MAX_ROSTER_BYTES

__all__ = ["BIG", "size_docs"]

BIG = frozenset({"snapshot-plaintext-over-total"})
"""Vectors that take seconds to replay (tests mark them slow)."""

_BUCKETS = 64


def _nonce(label: str) -> bytes:
    return hashlib.blake2b(label.encode(), digest_size=24, person=b"vector-nonce").digest()


def _over(limit: int, signer: str) -> bytes:
    """A canonical envelope of exactly ``limit + 1`` bytes: a body padded by one string."""
    shell = {"body": {"pad": ""}, "signer": signer, "sig": b64e(b"\x00" * 64)}
    pad = limit + 1 - len(canonical.encode(shell))
    data = canonical.encode({**shell, "body": {"pad": "a" * pad}})
    assert len(data) == limit + 1
    return data


def _doc(
    description: str, setup: list[tuple[str, bytes]], obj: dict[str, Any], expected: str
) -> dict[str, Any]:
    from .generate import ROOT, TEAM

    return {
        "description": description,
        "inputs": {
            "team": TEAM, "root_public": b64e(ROOT.sign_public),
            "setup": [{"kind": k, "data": b64e(d)} for k, d in setup], "object": obj,
        },
        "expected": "accept" if expected == "accept" else {"reject": expected},
    }  # fmt: skip


def _envelopes() -> dict[str, dict[str, Any]]:
    from .generate import ALICE, BASE, NOW, R1, ROOT

    kinds = [
        ("roster", "roster", MAX_ROSTER_BYTES, [], {}),
        ("keyring", "keyring", MAX_KEYRING_BYTES, [("roster", R1)], {}),
        ("manifest", "manifest", MAX_MANIFEST_BYTES, BASE, {}),
        ("checkpoint", "checkpoint", MAX_CHECKPOINT_BYTES, [("roster", R1)], {"now_ms": NOW}),
        ("invite", "invite", MAX_JOIN_BYTES, [], {"now_ms": NOW}),
        ("join", "join", MAX_JOIN_BYTES, [], {}),
        ("device-invite", "device-invite", MAX_DEVICE_INVITE_BYTES, [], {"now_ms": NOW}),
        ("device-join", "device-join", MAX_DEVICE_JOIN_BYTES, [], {}),
    ]
    out = {}
    for name, kind, limit, setup, extra in kinds:
        signer = ALICE.kid if kind in ("manifest", "join", "device-invite") else ROOT.kid
        data = _over(limit, signer)
        obj = {"kind": kind, "data_zlib": b64e(zlib.compress(data, 9)), **extra}
        out[f"{name}-envelope-over-limit"] = _doc(
            f"a {kind} envelope of {limit + 1} bytes, one over its limit, shaped as an "
            "envelope: too-large before it is parsed",
            setup, obj, "too-large",
        )  # fmt: skip
    return out


def _chunk(payload: bytes, bucket: int) -> tuple[ChunkRef, bytes]:
    from .generate import ALICE, KEY1, PROJECT, TEAM

    ad = chunk_ad(TEAM, PROJECT, ALICE.kid, 1, bucket)
    data = KEY1.encrypt(SUITE.pad(zlib.compress(payload, 9)), ad, nonce=_nonce(f"b{bucket}"))
    return ChunkRef(bucket, chunk_id(SUITE, data), len(data)), data


def _over_total() -> dict[str, dict[str, Any]]:
    """16 chunks of valid records, each inflating to nearly ``MAX_BUCKET_PLAINTEXT``, then
    a 17th (the last bucket) inflating to ``MAX_BUCKET_PLAINTEXT`` of zeros: within the
    bucket cap, over the snapshot's total once added (never parsed)."""
    from .generate import ALICE, BASE, NOW, PROJECT, TEAM, record

    # 4 bytes each, a record of ~32 KB: within zlib's window of the one before, so that
    # the ~270 MB compress to well under a megabyte
    content = "\U0001f600" * 7_900
    one = len(canonical.encode([replace(record(ALICE, 1), content=content).to_wire()]))
    per_chunk = MAX_BUCKET_PLAINTEXT // (one + 1)
    full: dict[int, list[Any]] = {}
    i = 1
    while len(full) < 16 or any(len(v) < per_chunk for v in full.values()):
        r = record(ALICE, i)
        b = bucket_of(SUITE, r.id, _BUCKETS)
        if b < _BUCKETS - 1 and (b in full or len(full) < 16) and len(full.get(b, [])) < per_chunk:
            full.setdefault(b, []).append(replace(r, content=content))
        i += 1
    refs: list[tuple[ChunkRef, bytes]] = []
    inflated = 0
    for b in sorted(full):
        wire = canonical.encode([r.to_wire() for r in full[b]])
        inflated += len(wire)
        refs.append(_chunk(wire, b))
    assert inflated <= MAX_SNAPSHOT_PLAINTEXT < inflated + MAX_BUCKET_PLAINTEXT
    refs.append(_chunk(b"\x00" * MAX_BUCKET_PLAINTEXT, _BUCKETS - 1))
    records = sum(len(v) for v in full.values()) + 1
    m = Manifest(TEAM, PROJECT, ALICE.kid, 1, None, 1, 1, _BUCKETS,
                 tuple(r for r, _ in refs), records, (), NOW)  # fmt: skip
    obj = {
        "kind": "snapshot",
        "data": b64e(m.sign(ALICE)),
        "chunks": {r.id: b64e(c) for r, c in refs},
        "content_key": b64e(b"\x11" * 32),
    }
    return {
        "snapshot-plaintext-over-total": _doc(
            f"16 chunks of valid records inflating to {inflated} bytes, then one of "
            f"{MAX_BUCKET_PLAINTEXT} zero bytes (within the bucket cap): over "
            "MAX_SNAPSHOT_PLAINTEXT in total",
            BASE,
            obj,
            "too-large",
        ),
    }


def size_docs() -> dict[str, dict[str, Any]]:
    return {**_envelopes(), **_over_total()}
