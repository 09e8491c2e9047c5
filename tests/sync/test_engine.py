"""The sync engine between real members (own homes, stores, keys) over one real folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.rows import load_row, next_hlc, record_from_row
from sealmem.client.store.writer import write_version
from sealmem.client.sync import redaction, replica
from sealmem.client.sync.engine import sync_lock
from sealmem.client.sync.session import sync_health
from sealmem.protocol import reasons
from sealmem.protocol.errors import StoreError
from tests.sync.conftest import DAY_MS, PROJECT, World, make_world


@pytest.mark.slow
def test_alice_remembers_and_bob_recalls_with_provenance(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember("the staging database is reset every night at 02:00", kind="warning")
    pushed = alice.sync()
    assert (pushed.pushed_versions, pushed.pushed_chunks) == (1, 1)
    pulled = bob.sync()
    assert (pulled.pulled_new, pulled.pulled_updated) == (1, 0)
    assert pulled.members == {alice.key.kid}
    assert pulled.line().startswith("pushed 0 versions in 0 chunks; pulled 1 new + 0 updated")
    hits = bob.store.recall("staging database reset", project=PROJECT)
    assert [h.memory.id for h in hits] == [mem.id]
    prov = hits[0].memory.provenance
    assert prov.transport == "folder"
    assert (prov.signer, prov.signer_name, prov.verified) == (alice.key.kid, "alice", True)
    assert prov.snapshot_seq == 1
    assert prov.received_at is not None
    assert hits[0].memory.record.author == alice.key.kid
    again = bob.sync()
    assert (again.pulled_new, again.pulled_updated, again.refused) == (0, 0, [])


@pytest.mark.slow
def test_concurrent_edits_converge_whatever_the_order(world: World) -> None:
    alice, bob, carol = world.nodes["alice"], world.nodes["bob"], world.nodes["carol"]
    mem = alice.remember("use ruff for linting", keywords=["lint"])
    world.sync_all()
    # both edit the same memory before seeing each other's edit
    alice.remember("use ruff for linting", keywords=["ruff"], importance=0.7)
    bob.remember("use ruff for linting", keywords=["style"], importance=0.6)
    assert alice.store.get(mem.id).record.editor == alice.key.kid
    assert bob.store.get(mem.id).record.editor == bob.key.kid
    carol.sync()
    bob.sync()
    alice.sync()
    carol.sync()
    world.sync_all()
    states = {name: node.winners() for name, node in world.nodes.items()}
    assert states["alice"] == states["bob"] == states["carol"] == states["admin"]
    winner = states["alice"][mem.id]
    assert winner[3] in {alice.key.kid, bob.key.kid}
    # the version that lost is kept in the loser's history, not dropped
    assert len(alice.store.history(mem.id)) >= 1


@pytest.mark.slow
def test_a_pulled_copy_never_lowers_local_importance(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember("the API rate limit is 100 requests per minute", importance=0.9)
    world.sync_all(1)
    # alice lowers the importance with a local edit (allowed locally)
    conn = alice.store.connection
    with transaction(conn):
        row = load_row(conn, mem.id)
        assert row is not None
        lowered = record_from_row(row).evolve(importance=0.2, hlc=next_hlc(conn, alice.clock()))
        write_version(
            conn, lowered, provenance=Provenance.local(), local_importance=0.2,
            seen_count=1, updated_at=alice.clock(),
        )  # fmt: skip
    alice.sync()
    bob.sync()
    row = bob.store.connection.execute(
        "SELECT importance, local_importance FROM memories WHERE id = ?", (mem.id,)
    ).fetchone()
    assert row[0] == pytest.approx(0.2)  # the winner is alice's lowered version ...
    assert row[1] == pytest.approx(0.9)  # ... but bob's local importance stays


@pytest.mark.slow
def test_forget_propagates_as_a_tombstone(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember("the old build server is build01")
    world.sync_all(1)
    assert not bob.store.get(mem.id).deleted
    bob.store.forget(mem.id, reason="build01 was decommissioned")
    bob.sync()
    alice.sync()
    gone = alice.store.get(mem.id)
    assert gone.deleted
    assert gone.record.delete_reason == "build01 was decommissioned"
    assert gone.provenance.signer == bob.key.kid
    # alice wrote it: bob's tombstone is his proposal to delete it, shown beside her text
    [hit] = alice.store.recall("build server", project=PROJECT)
    shown = alice.store.reader().resolve(hit.memory)
    assert shown is not None
    assert shown.memory.content == "the old build server is build01"
    assert [(p.action, p.memory.provenance.signer) for p in shown.proposals] == [
        ("delete", bob.key.kid)
    ]
    assert bob.store.recall("build server", project=PROJECT) == []  # his own delete applies


@pytest.mark.slow
def test_private_memories_and_plaintext_never_reach_the_folder(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    canary = "CANARY-7f3a9c-private-note"
    alice.remember(f"{canary} my own scratch note", private=True)
    alice.remember("team-visible-marker about the release checklist")
    alice.sync()
    blobs = b"".join(p.read_bytes() for p in world.folder.rglob("*") if p.is_file())
    assert canary.encode() not in blobs
    assert b"team-visible-marker" not in blobs  # team memories travel encrypted
    bob.sync()
    assert [m.content for m in bob.memories().values() if canary in m.content] == []
    assert any("team-visible-marker" in m.content for m in bob.memories().values())


@pytest.mark.slow
def test_redaction_runs_again_before_push(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember("deploy notes")
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    conn = alice.store.connection
    with transaction(conn):  # a secret that slipped in (e.g. an older redaction rule set)
        row = load_row(conn, mem.id)
        assert row is not None
        leaked = record_from_row(row).evolve(
            content=f"deploy with token {secret}", hlc=next_hlc(conn, alice.clock())
        )
        write_version(
            conn, leaked, provenance=Provenance.local(), local_importance=0.5,
            seen_count=1, updated_at=alice.clock(),
        )  # fmt: skip
    alice.sync()
    bob.sync()
    assert "[REDACTED:github_token]" in bob.store.get(mem.id).content
    assert secret not in alice.store.get(mem.id).content


@pytest.mark.slow
def test_one_member_with_its_clock_a_day_off_still_converges(tmp_path: Path) -> None:
    w = make_world(tmp_path, "alice", "bob", "carol", offsets={"carol": -DAY_MS})
    try:
        alice, carol = w.nodes["alice"], w.nodes["carol"]
        mem = alice.remember("the cache TTL is 5 minutes")
        w.sync_all()
        carol.remember("the cache TTL is 5 minutes", keywords=["redis"], importance=0.8)
        w.sync_all()
        states = [n.winners() for n in w.nodes.values()]
        assert all(s == states[0] for s in states)
        assert states[0][mem.id][3] == carol.key.kid  # carol's later edit wins despite her clock
        alice.remember("the cache TTL is 5 minutes", keywords=["ttl"])
        w.sync_all()
        states = [n.winners() for n in w.nodes.values()]
        assert all(s == states[0] for s in states)
        assert states[0][mem.id][3] == alice.key.kid
        assert "ttl" in json.loads(str(states[0][mem.id][5]))
    finally:
        w.close()


@pytest.mark.slow
def test_two_syncs_of_one_store_do_not_interleave(world: World) -> None:
    home = world.nodes["alice"].home
    with (
        sync_lock(home),
        pytest.raises(StoreError, match="another sync"),
        sync_lock(home, timeout_s=0.2),
    ):
        pass
    with sync_lock(home, timeout_s=0.2):  # released: free again
        pass


@pytest.mark.slow
def test_nothing_changed_means_nothing_pushed(world: World) -> None:
    alice = world.nodes["alice"]
    alice.remember("a note to publish once")
    first = alice.sync()
    manifests = sorted(world.folder.rglob("manifest-*.json"))
    second = alice.sync()
    assert first.pushed_versions == 1
    assert (second.pushed_versions, second.pushed_chunks) == (0, 0)
    assert sorted(world.folder.rglob("manifest-*.json")) == manifests


def test_sync_health_reports_the_last_sync_and_alarms(world: World, tmp_path: Path) -> None:
    alice = world.nodes["alice"]
    assert sync_health(tmp_path / "nowhere", alice.store.connection)["configured"] is False
    alice.remember("health check note")
    alice.sync()
    health = sync_health(alice.home, alice.store.connection)
    assert health["configured"] is True
    assert health["last_sync"]["summary"]["pushed_versions"] == 1
    assert health["alarms"] == []
    replica.log_refusal(alice.store.connection, 1, reasons.FORK, "manifest x/webapp", "two")
    assert sync_health(alice.home, alice.store.connection)["alarms"] == [
        "fork: manifest x/webapp: two"
    ]


def test_pulled_versions_are_redacted_again(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    secret = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    mem = alice.remember("deploy notes")
    conn = alice.store.connection
    with transaction(conn):  # a secret that slipped past the writer's own rules
        row = load_row(conn, mem.id)
        assert row is not None
        leaked = record_from_row(row).evolve(
            content=f"deploy with token {secret}", hlc=next_hlc(conn, alice.clock())
        )
        write_version(
            conn, leaked, provenance=Provenance.local(), local_importance=0.5,
            seen_count=1, updated_at=alice.clock(),
        )  # fmt: skip
    # alice runs a sealmem that does not redact before pushing (an older rule set)
    monkeypatch.setattr(redaction, "reredact", lambda _conn, record, _me, _now: record)
    alice.sync()
    pulled = bob.sync()
    got = bob.store.get(mem.id)
    assert secret not in got.content
    assert "[REDACTED:github_token]" in got.content
    assert got.record.editor == alice.key.kid  # the version keeps its identity
    assert any("redacted what looked like secrets in 1 memories from alice" in w
               for w in pulled.warnings)  # fmt: skip
    assert (bob.sync().pulled_new, bob.sync().pulled_updated) == (0, 0)
