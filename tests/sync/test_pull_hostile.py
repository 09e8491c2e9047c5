"""A teammate's snapshot that verifies but is hostile inside: bounded cost, named refusal.

The writer is a real member holding the keys (``tests/sync/forge.py``), so every
chunk hashes, decrypts and inflates; what is wrong is inside.  The reader must
refuse the snapshot by name, merge nothing of it, keep its chain head where it
was, and go on with the rest of the sync.
"""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path

import pytest

from sealmem.protocol import reasons
from sealmem.protocol.errors import StoreError
from tests.support.cli import in_process

from .conftest import PROJECT, Node, World
from .forge import bucket_plaintext, publish, records_by_bucket

pytestmark = pytest.mark.slow

CONTENT = "x" * 10_000  # inflates large, compresses to almost nothing


def _count_fetches(node: Node, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every chunk the node's real transport is asked for."""
    fetched: list[str] = []
    real = node.t.transport.chunk

    def counting(project: str, writer: str, chunk_id: str) -> bytes | None:
        fetched.append(chunk_id)
        return real(project, writer, chunk_id)

    monkeypatch.setattr(node.t.transport, "chunk", counting)
    return fetched


def _head(node: Node, writer: Node) -> object:
    return node.store.connection.execute(
        "SELECT seq FROM chain_heads WHERE writer = ?", (writer.key.kid,)
    ).fetchone()


def test_more_records_than_the_manifest_says_stops_before_later_chunks(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    bob.sync()  # trust the roster and keyrings first: the pull below is what is measured
    groups = records_by_bucket(alice, range(32), per_bucket=100, content=CONTENT)
    plaintexts = {b: bucket_plaintext(rs) for b, rs in groups.items()}
    inflated = sum(len(p) for p in plaintexts.values())
    manifest = publish(alice, plaintexts, records=len(plaintexts))  # says 32, holds 3200
    uploaded = sum(c.size for c in manifest.chunks)
    assert inflated > 100 * uploaded  # a small upload, a large inflation
    fetched = _count_fetches(bob, monkeypatch)

    tracemalloc.start()
    try:
        summary = bob.sync()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert [(r.reason, r.object) for r in summary.refused] == [
        (reasons.TAMPERED, f"manifest {alice.key.kid[:8]}/{PROJECT}")
    ]
    assert "more than the 32 records" in summary.refused[0].detail
    assert fetched == [manifest.chunks[0].id]  # refused after one chunk, the rest never fetched
    # the reader held one chunk's worth, not the snapshot's (33 MB before the opener)
    assert peak < inflated / 4, f"peak {peak} bytes for a snapshot inflating to {inflated}"
    assert bob.written_by(alice) == 0
    assert _head(bob, alice) is None
    assert bob.t.trusted().head(alice.key.kid, PROJECT) is None


def test_a_refusal_in_a_later_chunk_merges_nothing_of_the_earlier_ones(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    groups = records_by_bucket(alice, [3, 9], per_bucket=5, content="deploys go out on tuesdays")
    stray = groups[3][0]  # a record whose id hashes to bucket 3, filed in bucket 9 too
    plaintexts = {
        3: bucket_plaintext(groups[3]),
        9: bucket_plaintext(sorted([*groups[9], stray], key=lambda r: r.id)),
    }
    publish(alice, plaintexts, records=11)
    summary = bob.sync()
    assert [r.reason for r in summary.refused] == [reasons.WRONG_BUCKET]
    assert bob.written_by(alice) == 0  # bucket 3 was merged, then rolled back
    assert _head(bob, alice) is None
    assert summary.pulled_new == 0


def test_a_lone_surrogate_in_a_chunk_is_refused_and_the_sync_goes_on(
    world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    kept = carol.remember("the release branch is cut on the first monday")
    carol.sync()
    (bucket, records), *_ = records_by_bucket(alice, [5], 1, content="MARK").items()
    # bytes canonical.encode could never write: a JSON escape of a lone surrogate
    plaintext = bucket_plaintext(records).replace(b'"MARK"', b'"\\ud800"')
    assert b"\\ud800" in plaintext
    publish(alice, {bucket: plaintext}, records=1)

    monkeypatch.setenv("SEALMEM_HOME", str(bob.home))
    monkeypatch.chdir(tmp_path)
    run = in_process(capsys, monkeypatch)
    done = run("sync", "--json")
    assert done.code == 0, done.err
    report = done.json()
    refused = [r for r in report["refused"] if alice.key.kid[:8] in r["object"]]
    assert len(refused) == 1
    assert refused[0]["reason"] in (reasons.MALFORMED, reasons.NOT_CANONICAL)
    assert "Traceback" not in done.err
    assert carol.key.kid in report["members"]  # the other writer's memories still arrived
    assert bob.store.get(kept.id).content == kept.content
    assert bob.written_by(alice) == 0


def test_a_local_storage_failure_still_stops_the_sync(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    bob.sync()
    alice.remember("the staging VPN needs a fresh certificate every 30 days")
    alice.sync()
    conn = bob.store.connection
    conn.execute("PRAGMA query_only = ON")  # the store refuses writes, as a full disk would
    try:
        with pytest.raises(StoreError, match="local store failed while merging") as info:
            bob.sync()
        assert isinstance(info.value.__cause__, sqlite3.Error)
    finally:
        conn.execute("PRAGMA query_only = OFF")
    assert bob.sync().pulled_new == 1  # nothing was half-kept: the retry pulls it all
