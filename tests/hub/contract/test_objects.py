"""Contract: rosters, keyrings and manifests are compare-and-swapped; each team has
its own change cursor and generation."""

from __future__ import annotations

import pytest

from sealmem.hub.storage import (
    Conflict,
    KeyringBlob,
    MissingBase,
    MissingChunks,
    StaleSeq,
    Storage,
    StoredHead,
)

from .conftest import Backend
from .world import ALICE, BOB, PROJECT, T0, chunk, manifest, roster, team


def test_seq_is_compare_and_swapped(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    manifest(store, "t1", ALICE, 1, [a])
    for stale in (1, 0):
        with pytest.raises(StaleSeq) as caught:
            manifest(store, "t1", ALICE, stale, [a])
        assert caught.value.current == 1
    manifest(store, "t1", ALICE, 5, [a])  # gaps are allowed
    assert store.newest_seqs("t1", PROJECT) == {ALICE: 5}


def test_a_write_reads_the_heads_of_the_slots_it_names_only(store: Storage) -> None:
    team(store, "t1")
    team(store, "t2")
    a = chunk(store, "t1", ALICE, b"one")
    b = chunk(store, "t1", BOB, b"two")
    manifest(store, "t1", ALICE, 1, [a])
    manifest(store, "t1", ALICE, 4, [a])
    manifest(store, "t1", BOB, 2, [b])
    manifest(store, "t2", ALICE, 9, [chunk(store, "t2", ALICE, b"three")])
    with store.write("t1") as tx:
        assert tx.heads_of([(PROJECT, ALICE)]) == [StoredHead(PROJECT, ALICE, 4, f"{4:064x}", 0)]
        named = tx.heads_of([(PROJECT, BOB), (PROJECT, ALICE), ("other", ALICE), (PROJECT, "x")])
        assert set(named) == {
            StoredHead(PROJECT, ALICE, 4, f"{4:064x}", 0),
            StoredHead(PROJECT, BOB, 2, f"{2:064x}", 0),
        }
        assert len(named) == 2
        assert tx.heads_of([]) == []


def test_only_the_newest_manifests_are_kept(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    for seq in range(1, 6):
        manifest(store, "t1", ALICE, seq, [a], keep=2)
    kept = store.manifests("t1", PROJECT, ALICE)[ALICE]
    assert kept == [b"manifest-5", b"manifest-4"]


def test_the_base_of_the_newest_delta_is_kept_past_the_newest(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    manifest(store, "t1", ALICE, 1, [a], keep=2)
    for seq in range(2, 6):
        manifest(store, "t1", ALICE, seq, [a], keep=2, base=1)
    kept = store.manifests("t1", PROJECT, ALICE)[ALICE]
    assert kept == [b"manifest-5", b"manifest-4", b"manifest-1"]
    manifest(store, "t1", ALICE, 6, [a], keep=2)  # a full one: the old base goes
    assert store.manifests("t1", PROJECT, ALICE)[ALICE] == [b"manifest-6", b"manifest-5"]


@pytest.mark.slow
def test_a_delta_whose_base_the_slot_lacks_stores_nothing(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    manifest(store, "t1", ALICE, 1, [a])
    manifest(store, "t1", BOB, 1, [chunk(store, "t1", BOB, b"bob")])
    before = (store.cursor("t1"), store.usage("t1"), store.manifests("t1", PROJECT))
    for base in (7, None):  # a seq never stored; seq 1 under another hash
        with pytest.raises(MissingBase) as caught, store.write("t1") as tx:
            tx.put_manifest(
                StoredHead(PROJECT, ALICE, 2, "2" * 64, 0), b"delta", [a], 3, T0,
                (base or 1, ("7" if base else "e") * 64),
            )  # fmt: skip
        assert caught.value.seq == (base or 1)
    assert (store.cursor("t1"), store.usage("t1"), store.manifests("t1", PROJECT)) == before


def test_a_manifest_naming_a_chunk_the_slot_lacks_stores_nothing(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    b = chunk(store, "t1", BOB, b"bob's")  # in another writer's slot: not alice's
    before = (store.cursor("t1"), store.usage("t1"))
    with pytest.raises(MissingChunks) as caught:
        manifest(store, "t1", ALICE, 1, [a, b])
    assert caught.value.ids == [b]
    assert store.manifests("t1", PROJECT) == {}
    assert (store.cursor("t1"), store.usage("t1")) == before


def test_a_duplicate_roster_version_is_a_conflict(store: Storage) -> None:
    team(store, "t1")
    roster(store, "t1", 2)
    with pytest.raises(Conflict):
        roster(store, "t1", 2)
    with pytest.raises(Conflict):
        team(store, "t1")  # v1 again: the team is registered
    with pytest.raises(Conflict):
        roster(store, "nobody", 2)  # no v1
    assert store.rosters("t1", 0) == [b"roster-1-of-t1", b"roster-2"]


def _keyring(store: Storage, data: bytes, roster_version: int) -> None:
    with store.write("t1") as tx:
        tx.put_keyring(KeyringBlob(PROJECT, 1, data, roster_version), T0)


def test_keyrings_are_compare_and_swapped_on_the_roster_version(store: Storage) -> None:
    team(store, "t1", T0, KeyringBlob(PROJECT, 1, b"kr-v1", 1))
    _keyring(store, b"kr-v3", 3)
    with pytest.raises(Conflict) as stale:
        _keyring(store, b"kr-v2", 2)  # a writer that had not seen v3: last-writer-wins no more
    assert stale.value.stale
    with pytest.raises(Conflict) as fork:
        _keyring(store, b"other-v3", 3)
    assert not fork.value.stale
    cursor = store.cursor("t1")
    _keyring(store, b"kr-v3", 3)  # the same one again: nothing happens
    assert store.cursor("t1") == cursor
    _keyring(store, b"kr-v4", 4)
    assert [(k.data, k.roster_version) for k in store.keyrings("t1", PROJECT)] == [(b"kr-v4", 4)]


def test_a_failed_write_leaves_nothing(store: Storage) -> None:
    team(store, "t1")
    before = (store.cursor("t1"), store.generation("t1"), store.rosters("t1", 0))

    def refused_after_writing() -> None:
        with store.write("t1") as tx:
            tx.put_roster(2, b"roster-2", [], [], T0)
            raise RuntimeError("the verifier refused something after the write")

    with pytest.raises(RuntimeError):
        refused_after_writing()
    assert (store.cursor("t1"), store.generation("t1"), store.rosters("t1", 0)) == before


def test_cursors_count_per_team(store: Storage) -> None:
    team(store, "ta", T0, KeyringBlob(PROJECT, 1, b"kr", 1))
    team(store, "tb")
    a = chunk(store, "ta", ALICE, b"one")
    manifest(store, "ta", ALICE, 1, [a])
    roster(store, "ta", 2)
    assert store.cursor("ta") == 4  # keyring, roster v1, manifest, roster v2
    assert store.cursor("tb") == 1  # team A's activity is not in team B's cursor
    assert [c.cursor for c in store.changes("ta", 0)] == [1, 2, 3, 4]
    assert [(c.cursor, c.kind, c.seq) for c in store.changes("tb", 0)] == [(1, "roster", 1)]
    assert [c.kind for c in store.changes("ta", 2)] == ["manifest", "roster"]
    assert store.changes("tb", 1) == []
    assert store.cursor("unknown") == 0


def test_the_generation_moves_with_rosters_and_keyrings_only(store: Storage) -> None:
    assert store.generation("t1") is None
    team(store, "t1")
    first = store.generation("t1")
    assert first is not None
    a = chunk(store, "t1", ALICE, b"one")
    manifest(store, "t1", ALICE, 1, [a])
    assert store.generation("t1") == first
    _keyring(store, b"kr", 1)
    after_keyring = store.generation("t1")
    assert after_keyring is not None
    assert after_keyring > first
    roster(store, "t1", 2)
    now = store.generation("t1")
    assert now is not None
    assert now > after_keyring
    with store.write("t1") as tx:
        assert tx.generation == now


def test_a_revoked_writer_keeps_only_its_pinned_manifest(store: Storage) -> None:
    team(store, "t1")
    a = chunk(store, "t1", ALICE, b"one")
    for seq in (1, 2, 3):
        manifest(store, "t1", ALICE, seq, [a])
    manifest(store, "t1", BOB, 1, [chunk(store, "t1", BOB, b"bob")])
    with store.write("t1") as tx:
        assert tx.drop_writer(ALICE, {PROJECT: 2}) == 2
    assert store.manifests("t1", PROJECT, ALICE) == {ALICE: [b"manifest-2"]}
    assert list(store.manifests("t1", PROJECT, BOB)) == [BOB]
    manifest(store, "t1", ALICE, 3, [a])  # the slot's newest is its pin again
    with pytest.raises(StaleSeq) as caught:
        manifest(store, "t1", ALICE, 3, [a])
    assert caught.value.current == 3


def test_a_write_reads_what_it_wrote(store: Storage) -> None:
    """Storage read inside a write, on the writing thread (what the team's trusted state
    is loaded from), sees the write's own work."""
    with store.write("t1") as tx:
        tx.put_roster(1, b"roster-1", [(ALICE, b"l" * 32)], [], T0)
        assert store.generation("t1") == 1
        assert store.rosters("t1", 0) == [b"roster-1"]
    with store.push("t1") as tx:
        tx.put_manifest(StoredHead(PROJECT, ALICE, 1, f"{1:064x}", 0), b"m-1", [], 3, T0)
        assert store.newest_seqs("t1", PROJECT) == {ALICE: 1}


def test_everything_survives_reopening(storage_backend: Backend) -> None:
    store = storage_backend.open()
    team(store, "t1", T0, KeyringBlob(PROJECT, 1, b"kr", 1))
    a = chunk(store, "t1", ALICE, b"one")
    manifest(store, "t1", ALICE, 1, [a])
    seen = (store.cursor("t1"), store.generation("t1"), store.usage("t1"))
    store.close()
    again = storage_backend.open()
    assert (again.cursor("t1"), again.generation("t1"), again.usage("t1")) == seen
    assert again.chunk("t1", PROJECT, ALICE, a) == b"one"
    with again.write("t1") as tx:
        assert tx.heads_of([(PROJECT, ALICE)]) == [StoredHead(PROJECT, ALICE, 1, f"{1:064x}", 0)]
