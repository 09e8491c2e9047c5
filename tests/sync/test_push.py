"""The push side of the engine over a real folder: what it writes locally, the packed
own-chain clock and its migration, re-redaction as its own step, what a grant lets out."""

from __future__ import annotations

import pytest

from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.rows import load_row, next_hlc, record_from_row
from sealmem.client.store.writer import write_version
from sealmem.client.sync import push, redaction, replica
from sealmem.client.sync.engine import SyncSummary
from sealmem.client.team import admin
from sealmem.protocol.hlc import MAX_COUNTER, MAX_WALL_MS, ZERO, Hlc, pack
from tests.sync.conftest import PROJECT, Node, World

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def leak(node: Node, text: str) -> str:
    """A team memory of ``node`` whose current version holds a secret (an older rule set)."""
    mem = node.remember(text)
    conn = node.store.connection
    with transaction(conn):
        row = load_row(conn, mem.id)
        assert row is not None
        leaked = record_from_row(row).evolve(
            content=f"{text} with token {SECRET}", hlc=next_hlc(conn, node.clock())
        )
        write_version(
            conn, leaked, provenance=Provenance.local(), local_importance=0.5,
            seen_count=1, updated_at=node.clock(),
        )  # fmt: skip
    return mem.id


@pytest.mark.slow
def test_a_push_writes_nothing_but_its_own_chain_head(world: World) -> None:
    alice = world.nodes["alice"]
    alice.remember("a plain note")
    leak(alice, "deploy notes")
    conn = alice.store.connection
    state, _ = alice.t.refresh(alice.t.trusted(), alice.clock())
    statements: list[str] = []
    # without the redaction step that runs before it (see test_engine), the push itself
    # must not write new versions: it reads, plans, publishes, records its head
    conn.set_trace_callback(statements.append)
    try:
        summary = SyncSummary()
        push.push_project(alice.t, state, PROJECT, summary, alice.clock)
    finally:
        conn.set_trace_callback(None)
    writes = [s for s in statements if s.lstrip().upper().startswith(WRITES)]
    assert summary.pushed_versions == 2
    assert writes  # the new head is recorded
    # besides the head: the bucket keys of new rows, the write log it carried, and the
    # store's write journal counting the transaction (sealmem.client.store.journal), and a
    # full manifest kept as the base of the deltas that follow (sealmem.client.sync.bases),
    # and the manifest recorded before it is sent (sealmem.client.sync.own_chain)
    bookkeeping = (
        "own_chain", "push_dirty", "UPDATE memories SET bucket_key = ", "'commits'",
        "'manifest-base'", "own_sends",
    )  # fmt: skip
    assert all(any(b in s for b in bookkeeping) for s in writes), writes
    assert any("own_chain" in s for s in writes), writes


@pytest.mark.slow
def test_redact_pending_redacts_only_what_was_not_pushed_and_once(world: World) -> None:
    alice = world.nodes["alice"]
    conn = alice.store.connection
    mid = leak(alice, "deploy notes")
    before = alice.store.get(mid).record.hlc
    with transaction(conn):
        assert redaction.redact_pending(conn, alice.key.kid, PROJECT, before, alice.clock()) == 0
    assert SECRET in alice.store.get(mid).content  # already pushed (as far as `since` says)
    with transaction(conn):
        assert redaction.redact_pending(conn, alice.key.kid, PROJECT, ZERO, alice.clock()) == 1
    cleaned = alice.store.get(mid)
    assert SECRET not in cleaned.content
    assert "[REDACTED:github_token]" in cleaned.content
    assert cleaned.record.hlc > before  # a new local version, newer than the leaked one
    assert cleaned.record.editor == alice.key.kid
    with transaction(conn):
        assert redaction.redact_pending(conn, alice.key.kid, PROJECT, ZERO, alice.clock()) == 0


@pytest.mark.slow
def test_own_chain_keeps_a_far_future_clock_in_the_one_packing(world: World) -> None:
    alice = world.nodes["alice"]
    alice.remember("a note")
    alice.sync()
    conn = alice.store.connection
    own = replica.load_own_chain(conn, PROJECT)
    assert own is not None
    far = Hlc(MAX_WALL_MS, MAX_COUNTER)
    with transaction(conn):  # (wall << 20) + counter overflowed SQLite's int64 here
        replica.save_own_chain(conn, replica.OwnChain(
            own.project, own.seq, own.hash, own.manifest, own.digests, far, own.pushed_count,
            own.reset_at,
        ), alice.clock())  # fmt: skip
    raw = conn.execute("SELECT pushed_wall FROM own_chain WHERE project = ?", (PROJECT,))
    assert raw.fetchone()[0] == pack(far)
    loaded = replica.load_own_chain(conn, PROJECT)
    assert loaded is not None
    assert loaded.pushed_wall == far


@pytest.mark.slow
def test_a_member_without_write_grant_has_nothing_to_push(world: World) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    admin.grant(adm.t, "alice", PROJECT, read=True, write=False, now=adm.clock())
    alice.sync()
    bob.sync()
    assert not alice.t.roster().can_write(alice.key.kid, PROJECT)
    alice.remember("alice may read webapp but not write it")
    assert alice.sync().pushed_versions == 0
    alice.remember("alice still writes the shared project", project="shared")
    assert alice.sync().pushed_versions == 1
    assert alice.sync().pushed_versions == 0
    bob.remember("bob writes webapp")
    assert bob.sync().pushed_versions == 1
