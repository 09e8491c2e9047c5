"""Incremental push over a real folder: a push reads and re-encodes only the buckets that
changed (local writes, forget, pulls that take a memory from us, private memories
shared), and what it publishes is what a full rebuild from every row would publish."""

from __future__ import annotations

import random

import pytest

from sealmem.client.sync import own_chain, push, replica
from sealmem.client.sync.engine import SyncSummary
from sealmem.crypto import SUITE
from sealmem.protocol.merge import collect_tombstones
from sealmem.protocol.snapshot import build_snapshot
from tests.sync.conftest import PROJECT, Node, World

FULL_READ = "AND visibility = 'team' ORDER BY id"  # publishable_records: every own row


def traced_push(node: Node) -> tuple[SyncSummary, list[str]]:
    """Run the push of ``node`` in PROJECT alone; return its summary and SQL statements."""
    state, _ = node.t.refresh(node.t.trusted(), node.clock())
    statements: list[str] = []
    conn = node.store.connection
    conn.set_trace_callback(statements.append)
    try:
        summary = SyncSummary()
        push.push_project(node.t, state, PROJECT, summary, node.clock)
    finally:
        conn.set_trace_callback(None)
    return summary, statements


def full_digests(node: Node) -> tuple[dict[int, str], int, int]:
    """(digests, buckets, records) of the snapshot a full rebuild of ``node``'s rows gives."""
    conn = node.store.connection
    chain = replica.load_own_chain(conn, PROJECT)
    assert chain is not None
    current = replica.publishable_records(conn, node.key.kid, PROJECT)
    kept = collect_tombstones({r.id: r for r in current}, node.clock())
    snap = build_snapshot(
        SUITE, node.t.content_key(node.t.trusted(), PROJECT, 1) or _no_key(), node.key,
        team=node.t.config.team, project=PROJECT, epoch=1, roster_version=1, seq=1, prev=None,
        records=sorted(kept.values(), key=lambda r: r.id), random=lambda n: bytes(n),
    )  # fmt: skip
    return dict(snap.digests), snap.manifest.buckets, snap.manifest.records


def _no_key() -> object:
    raise AssertionError("no content key for the project")


def published(node: Node) -> tuple[dict[int, str], int, int]:
    chain = replica.load_own_chain(node.store.connection, PROJECT)
    assert chain is not None
    manifest = own_chain.own_heads(node.t, PROJECT, chain).own
    assert manifest is not None
    return dict(chain.digests), manifest.manifest.buckets, manifest.manifest.records


@pytest.mark.slow
def test_one_change_reads_only_its_bucket(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    for i in range(150):
        alice.remember(f"note {i} about the build cache", keywords=[f"k{i}"])
    alice.sync()
    assert published(alice) == full_digests(alice)
    alice.remember("one more note, after the first push")
    summary, statements = traced_push(alice)
    assert summary.pushed_versions == 1
    assert summary.pushed_chunks == 1
    assert not [s for s in statements if FULL_READ in s and "bucket_key" not in s], statements
    assert published(alice) == full_digests(alice)
    bob.sync()
    assert any(m.content.startswith("one more note") for m in bob.memories().values())


@pytest.mark.slow
def test_every_kind_of_write_ends_in_the_full_snapshot(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    rnd = random.Random(7)
    ids = [alice.remember(f"seed memory {i}", keywords=["seed"]).id for i in range(90)]
    private = [alice.remember(f"private memory {i}", private=True).id for i in range(5)]
    alice.sync()
    bob.sync()
    for round_ in range(4):
        for _ in range(6):
            what = rnd.choice(["new", "again", "forget", "share", "teammate-forgets"])
            if what == "new":
                ids.append(alice.remember(f"round {round_} memory {rnd.random()}").id)
            elif what == "again":  # the same text, another kind: a new version of it
                mem = alice.store.get(rnd.choice(ids))
                if not mem.record.deleted:
                    alice.remember(mem.content, kind=rnd.choice(["decision", "warning"]))
            elif what == "forget":
                mid = rnd.choice(ids)
                if not alice.store.get(mid).record.deleted:
                    alice.store.forget(mid, reason="outdated")
            elif what == "share" and private:
                alice.store.share(private.pop())
            else:  # bob forgets one of alice's memories: it leaves alice's snapshot
                mid = rnd.choice(ids)
                if mid in bob.memories() and not bob.store.get(mid).record.deleted:
                    bob.store.forget(mid, reason="wrong")
                    bob.sync()
        alice.sync()
        assert published(alice) == full_digests(alice), f"round {round_}"
        assert not bob.sync().refused
        mine = {
            k: v[1:] for k, v in alice.winners().items() if v[3] == alice.key.kid
        }  # what alice publishes, as bob holds it
        theirs = {k: bob.winners()[k][1:] for k in mine}
        assert theirs == mine


def test_nothing_changed_leaves_the_log_empty_and_pushes_nothing(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    for i in range(20):
        alice.remember(f"alice note {i}")
    alice.sync()
    conn = alice.store.connection
    assert conn.execute("SELECT COUNT(*) FROM push_dirty").fetchone()[0] == 0
    bob.remember("bob writes in the same project")
    bob.sync()
    assert alice.sync().pushed_chunks == 0  # a teammate's memory logged, nothing of ours
    nulls = conn.execute("SELECT COUNT(*) FROM memories WHERE bucket_key IS NULL").fetchone()
    assert nulls[0] == 0
