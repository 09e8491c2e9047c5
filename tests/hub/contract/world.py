"""Small helpers for the storage contract: teams, objects and chunks as plain bytes
(storage never verifies signatures: that is the hub's Teams layer)."""

from __future__ import annotations

import hashlib

from sealmem.hub.storage import BlobKey, KeyringBlob, Storage, StoredHead

T0 = 1_700_000_000_000
PROJECT = "webapp"
ALICE = "a" * 26
BOB = "b" * 26
ADMIN = "c" * 26


def cid(data: bytes) -> str:
    """A chunk id for the test (the real one is BLAKE2b; storage does not care)."""
    return hashlib.blake2b(data, digest_size=32).hexdigest()


def verify(key: BlobKey, data: bytes) -> bool:
    return cid(data) == key.chunk_id


def team(store: Storage, name: str, now: int = T0, *keyrings: KeyringBlob) -> None:
    """Register ``name`` with a roster v1 listing the admin, alice and bob."""
    members = [(ADMIN, b"k" * 32), (ALICE, b"l" * 32), (BOB, b"m" * 32)]
    with store.write(name) as tx:
        tx.put_roster(1, b"roster-1-of-" + name.encode(), members, list(keyrings), now)


def roster(store: Storage, name: str, version: int, now: int = T0) -> None:
    with store.write(name) as tx:
        tx.put_roster(version, f"roster-{version}".encode(), [], [], now)


def chunk(store: Storage, name: str, writer: str, data: bytes, now: int = T0) -> str:
    chunk_id = cid(data)
    store.put_chunk(name, PROJECT, writer, chunk_id, data, now)
    return chunk_id


def manifest(
    store: Storage, name: str, writer: str, seq: int, ids: list[str], *, keep: int = 3,
    now: int = T0, base: int | None = None,
) -> None:  # fmt: skip
    """Manifest ``seq`` (hash ``f"{seq:064x}"``); ``base``: a delta listed against that seq."""
    head = StoredHead(PROJECT, writer, seq, f"{seq:064x}", 0)
    listed = None if base is None else (base, f"{base:064x}")
    with store.write(name) as tx:
        tx.put_manifest(head, f"manifest-{seq}".encode(), ids, keep, now, listed)
