"""A hub whose chunk blobs are deleted behind its back heals within one sync of the
writer: a real uvicorn hub on 127.0.0.1 over each backend of the contract suite (SQLite
with its blob directory; PostgreSQL with moto's S3 server), real members, the blobs
deleted through another handle on the same store (a wiped or restored bucket).

The reader that meets the missing chunks keeps what it had and merges the rest (a
partial read); the hub drops the rows of the blobs it could not read, which marks the
writer's slot (``lost`` in the seqs answer); the writer encrypts those buckets again at
its next sync, and the reader then holds every memory."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.hub.http.server import BackgroundHub, free_port
from sealmem.hub.storage.backends import open_blobs
from sealmem.protocol import reasons

from .conftest import PROJECT, TEAM, TOKEN, HubWorld, Node, hub_config

pytestmark = pytest.mark.slow

FIRST = [f"alice's first note {i} about the release train" for i in range(30)]
LATER = [f"alice's later note {i} about the rollback plan" for i in range(30)]


@pytest.fixture(params=["sqlite", "postgresql+s3"])
def blobs_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str | None, str]]:
    """(db_url, blobs_url): None and the embedded blob directory, or PostgreSQL + S3."""
    if request.param == "sqlite":
        yield None, f"file://{tmp_path / 'hub-data' / 'blobs'}"
    else:
        yield request.getfixturevalue("pg_dsn"), request.getfixturevalue("s3_url")


@pytest.fixture
def lossy(tmp_path: Path, blobs_url: tuple[str | None, str], fast: bool) -> Iterator[HubWorld]:
    db, blobs = blobs_url
    extra = {} if db is None else {"db_url": db, "blobs_url": blobs}
    config = hub_config(tmp_path / "hub-data", port=free_port(), fast=fast, **extra)
    with BackgroundHub(config) as hub:
        homes = tmp_path / "homes"
        homes.mkdir()
        w = HubWorld(
            homes, hub.url, lambda key: HubTransport(hub.url, TEAM, key, operator_token=TOKEN)
        )
        w.create()
        w.join("alice", "bob")
        w.blobs = blobs  # type: ignore[attr-defined]
        try:
            yield w
        finally:
            w.close()


def _wipe(url: str, writer: str) -> int:
    """Delete every blob of ``writer`` behind the hub's back; count them."""
    store = open_blobs(url)
    try:
        gone = [e.key for e in store.entries() if e.key.writer == writer]
        for key in gone:
            store.delete(key)
        return len(gone)
    finally:
        store.close()


def _texts(node: Node) -> set[str]:
    rows = node.store.connection.execute(
        "SELECT content FROM memories WHERE visibility = 'team' AND project = ?", (PROJECT,)
    ).fetchall()
    return {str(r[0]) for r in rows}


def test_blobs_deleted_behind_the_hubs_back_heal_within_one_writer_sync(
    lossy: HubWorld,
) -> None:
    alice, bob = lossy.nodes["alice"], lossy.nodes["bob"]
    for note in FIRST:
        alice.remember(note)
    alice.sync()
    bob.sync()
    assert set(FIRST) <= _texts(bob)
    for note in LATER:
        alice.remember(note)
    alice.sync()
    assert _wipe(lossy.blobs, alice.key.kid) > 20  # type: ignore[attr-defined]

    met = bob.sync()  # every chunk it needs is gone: it keeps what it had

    assert reasons.MISSING_CHUNK in {r.reason for r in met.refused}
    assert set(FIRST) <= _texts(bob)

    started = time.monotonic()
    healing = alice.sync()  # nothing new to say: the hub's marks make it heal
    healed_s = time.monotonic() - started

    assert healing.pushed_chunks > 0
    assert healing.warnings == []
    started = time.monotonic()
    after = bob.sync()
    caught_up_s = time.monotonic() - started
    assert after.refused == []
    assert set(FIRST) | set(LATER) <= _texts(bob)
    assert alice.sync().pushed_chunks == 0  # healed: nothing more to publish
    print(f"healing sync {healed_s:.2f} s ({healing.pushed_chunks} chunks), "
          f"reader catch-up {caught_up_s:.2f} s")  # fmt: skip


def test_a_reader_that_never_read_the_writer_gets_everything_after_one_writer_sync(
    lossy: HubWorld,
) -> None:
    alice, bob = lossy.nodes["alice"], lossy.nodes["bob"]
    for note in FIRST:
        alice.remember(note)
    alice.sync()
    assert _wipe(lossy.blobs, alice.key.kid) > 10  # type: ignore[attr-defined]

    assert reasons.MISSING_CHUNK in {r.reason for r in bob.sync().refused}

    assert alice.sync().pushed_chunks > 0
    assert bob.sync().refused == []
    assert set(FIRST) <= _texts(bob)
