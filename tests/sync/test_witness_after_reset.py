"""After an admin reset, what teammates witnessed of the retired chain does not refuse
the new one: the new chain reaches the seqs the old one had, with other hashes.

Real members, real stores, one folder: alice loses her store (and the folder loses her
chain), an admin resets it, and alice publishes her new chain past the old seq while
bob and carol keep syncing.  (Her new chain starts above the seqs she sees witnessed,
so no new manifest meets an old witness at its own seq.)
"""

from __future__ import annotations

import pytest

from sealmem.client import MemoryStore
from sealmem.client.sync.session import Team
from sealmem.client.team import admin
from tests.sync.conftest import PROJECT, World

pytestmark = pytest.mark.slow


def test_the_new_chain_passes_the_old_chains_witnessed_seq(world: World) -> None:
    adm, alice, bob, carol = (world.nodes[n] for n in ("admin", "alice", "bob", "carol"))
    for i in range(3):  # alice's old chain: seq 1..3, witnessed by bob's manifests
        alice.remember(f"alice's old note {i}")
        alice.sync()
        bob.remember(f"bob's note {i}")
        bob.sync()
        carol.sync()
    assert carol.t.trusted().witnessed[(alice.key.kid, PROJECT)].seq == 3

    alice.store.close()
    for suffix in ("", "-wal", "-shm"):
        (alice.home / f"store.db{suffix}").unlink(missing_ok=True)
    for path in world.folder.rglob(f"{alice.key.kid}/manifest-*.json"):
        path.unlink()
    alice.store = MemoryStore.open(alice.home / "store.db", author=alice.key.kid)
    alice.team = Team.open(alice.home, alice.store, alice.key)
    admin.reset_writer(adm.t, "alice", now=adm.clock())

    for i in range(4):  # the new chain: seq 1..4
        alice.remember(f"alice's new note {i}")
        alice.sync()
        bob.remember(f"bob's later note {i}")
        for reader in (bob, carol):
            summary = reader.sync()
            assert summary.refused == [], (reader.name, i, summary.refused)
    head = carol.t.trusted().head(alice.key.kid, PROJECT)
    assert head is not None
    assert head.seq > 3  # the new chain goes on above the old seqs
    contents = {m.content for m in carol.memories().values()}
    assert {f"alice's new note {i}" for i in range(4)} <= contents
