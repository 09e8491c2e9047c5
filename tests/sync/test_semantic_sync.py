"""The semantic extra's vectors stay where they were derived: a push over a real folder
carries none of their bytes, and a teammate's pull brings none."""

from __future__ import annotations

import zlib
from types import SimpleNamespace

import pytest

from sealmem.client.recall import semantic
from sealmem.protocol import snapshot

from .conftest import World

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not semantic.available(), reason="the semantic extra is not installed"),
]


def test_vectors_never_reach_a_snapshot_nor_a_teammate(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    texts = ["Orders live in PostgreSQL 16 on the db host", "Deploys run from release.yml"]
    for text in texts:
        alice.remember(text)
    assert semantic.fill(alice.store.connection, semantic.Embedder()) == len(texts)
    packed = [bytes(r[0]) for r in alice.store.connection.execute("SELECT vector FROM embeddings")]
    assert len(packed) == len(texts)

    pushed: list[bytes] = []  # every bucket's plaintext, as the push compresses it

    def compress(data: bytes, level: int = -1) -> bytes:
        pushed.append(bytes(data))
        return zlib.compress(data, level)

    monkeypatch.setattr(snapshot, "zlib", SimpleNamespace(compress=compress))
    alice.sync()
    plaintext = b"".join(pushed)
    assert all(text.encode() in plaintext for text in texts)  # the capture sees the records
    for vector in packed:
        for piece in (vector, vector.hex().encode(), vector[:32]):
            assert piece not in plaintext
    assert b"embedding" not in plaintext
    assert b"vector" not in plaintext

    bob.sync()
    assert {m.content for m in bob.memories().values()} >= set(texts)
    (n,) = bob.store.connection.execute("SELECT count(*) FROM embeddings").fetchone()
    assert n == 0
