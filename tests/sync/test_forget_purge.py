"""A forgotten memory leaves no text in any teammate's store, over a real folder.

Each member has its own home and store (kept open, so its WAL is there to be read);
the tombstone travels as a signed snapshot and each replica purges the text of the
memory's versions when it merges it.
"""

from __future__ import annotations

import time

import pytest

from sealmem.client.sync.engine import sync
from tests.support.traces import CONTENT, KEYWORD, LATER, MARKERS, traces
from tests.sync.conftest import World

TEXT = f"the release signing key passphrase is {CONTENT}"


@pytest.mark.slow
def test_a_teammate_that_merges_the_tombstone_keeps_no_text(world: World) -> None:
    """A tombstone erases, on every store, the text its writer wrote; what others wrote
    stays in their history (nothing of theirs is lost to a teammate's tombstone) until
    they forget it themselves, which erases it everywhere too."""
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember(TEXT, keywords=[KEYWORD])
    alice.remember(TEXT, keywords=[LATER])  # alice's second version; the first is history
    world.sync_all(1)
    assert bob.store.get(mem.id).content == TEXT
    bob.remember(TEXT, keywords=["release"])  # bob edits it: alice's version in his history
    world.sync_all(1)
    everyone = list(world.nodes.values())  # the admin reads the project too
    assert [n.name for n in everyone if traces(n.store.path)] == [n.name for n in everyone]

    bob.store.forget(mem.id, reason="a secret")  # a teammate's memory, forgotten by bob
    assert traces(bob.store.path) == []  # on bob's own store: every version erased
    world.sync_all(2)
    for node in everyone:
        assert node.store.get(mem.id).deleted, node.name
        found = node.store.recall(CONTENT, include_history=False, all_projects=True)
        if node is bob:  # his own delete applies
            assert found == []
        else:  # bob's delete of alice's memory is his proposal: her last version is shown
            shown = [node.store.reader().resolve(hit.memory) for hit in found]
            seen = [(s.memory.record.editor, [p.action for p in s.proposals]) for s in shown if s]
            assert seen == [(alice.key.kid, ["delete"])], node.name
        kept = node.store.history(mem.id)
        # bob's own version is gone everywhere; alice's stay on the others' stores
        assert all(v.record.editor != bob.key.kid or v.deleted for v in kept), node.name
    assert alice.store.history(mem.id)  # alice's text is not lost to bob's tombstone
    assert alice.store.get(mem.id).record.delete_reason == "a secret"

    alice.store.forget(mem.id, reason="mine too")  # alice erases her own text
    assert traces(alice.store.path) == []
    world.sync_all(2)
    for node in everyone:
        assert node.store.get(mem.id).deleted, node.name
        assert node.store.recall(CONTENT, include_history=True, all_projects=True) == []
        assert traces(node.store.path) == [], node.name


@pytest.mark.slow
def test_a_late_version_that_loses_to_the_tombstone_is_not_kept(world: World) -> None:
    """carol edited the memory before bob forgot it, but publishes the edit after: bob
    merges a version that loses to his tombstone, and keeps no copy of its text."""
    alice, bob, carol = (world.nodes[n] for n in ("alice", "bob", "carol"))
    mem = alice.remember("the staging database lives on db-7")
    world.sync_all(1)
    carol.remember("the staging database lives on db-7", keywords=[KEYWORD])
    time.sleep(0.01)  # bob's tombstone is later than carol's edit
    bob.store.forget(mem.id, reason="obsolete")
    sync(carol.t, clock=carol.clock, pull=False)  # carol publishes her edit, unaware
    bob.sync()
    assert bob.store.get(mem.id).deleted
    assert bob.store.history(mem.id) == []
    assert traces(bob.store.path, (KEYWORD,)) == []
    assert all(m not in str(bob.store.export()) for m in MARKERS)
