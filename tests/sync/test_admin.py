"""Admin operations between real members: revoke, rotate, grant, issue, reset-writer, GC."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.identity import import_member_key
from sealmem.client.sync import replica
from sealmem.client.sync.session import Team
from sealmem.client.team import admin
from sealmem.client.team.invite import read_invite
from sealmem.client.team.join import join_team
from sealmem.crypto import KDF_INTERACTIVE, SUITE, ContentKey, MemberKey, random_bytes
from sealmem.protocol import reasons
from sealmem.protocol.errors import DecryptionError, InputError
from sealmem.protocol.keyring import peek as peek_keyring
from sealmem.protocol.snapshot import build_snapshot
from tests.sync.conftest import PROJECT, Node, World


@pytest.mark.slow
def test_revoked_member_cannot_read_new_writes_and_its_writes_are_refused(world: World) -> None:
    adm, alice, bob, carol = (world.nodes[n] for n in ("admin", "alice", "bob", "carol"))
    before = alice.remember("written before carol left")
    world.sync_all(1)
    assert before.id in carol.memories()
    old_epoch = carol.t.roster().projects[PROJECT]
    old_key = carol.t.content_key(carol.t.trusted(), PROJECT, old_epoch)
    assert old_key is not None

    roster = admin.revoke(adm.t, "carol", keep_data=True, now=adm.clock())
    assert roster.projects[PROJECT] == old_epoch + 1
    after = alice.remember("written after carol left")
    alice.sync()
    carol.sync()
    assert after.id not in carol.memories()  # cannot decrypt anything written after
    assert carol.t.trusted().keyring(PROJECT, old_epoch + 1) is None  # a non-reader skips it
    newest = carol.t.transport.keyrings(PROJECT)[-1]
    keyring = peek_keyring(newest)
    assert keyring.epoch == old_epoch + 1
    assert carol.key.kid not in keyring.wraps
    assert carol.t.content_key(carol.t.trusted(), PROJECT, old_epoch + 1) is None
    for wrapped in keyring.wraps.values():
        with pytest.raises(DecryptionError):
            ContentKey.unwrap(wrapped, carol.key)

    # carol's own client no longer publishes; a hand-made manifest is refused by everyone
    assert carol.sync().pushed_versions == 0
    forged = carol.remember("carol writes after revocation")
    own = replica.load_own_chain(carol.store.connection, PROJECT)
    seq = (own.seq if own else 0) + 1
    snap = build_snapshot(
        SUITE, old_key, carol.key, team=carol.t.config.team, project=PROJECT, epoch=old_epoch,
        roster_version=roster.version - 1, seq=seq, prev=own.hash if own else None,
        records=[forged.record], random=random_bytes,
    )  # fmt: skip
    carol.t.transport.push(PROJECT, carol.key.kid, seq, snap.envelope, snap.new_chunks)
    for reader in (alice, bob, adm):
        summary = reader.sync()
        assert [r.reason for r in summary.refused] == [reasons.REVOKED]
        assert forged.id not in reader.memories()
    assert before.id in bob.memories()  # kept: revoked with --keep-data
    assert "revoked" in " ".join(carol.t.status()["alarms"])


def test_revoke_without_keep_data_drops_what_was_pulled_from_the_member(world: World) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember("alice's soon-to-be-untrusted note")
    world.sync_all(1)
    assert mem.id in bob.memories()
    admin.revoke(adm.t, alice.key.kid, keep_data=False, now=adm.clock())
    summary = bob.sync()
    assert mem.id not in bob.memories()
    assert any("revoked member" in w for w in summary.warnings)
    assert (
        len(
            bob.store.connection.execute("SELECT * FROM history WHERE id = ?", (mem.id,)).fetchall()
        )
        == 1
    )


@pytest.mark.slow
def test_rotate_and_grant_change_epochs_and_access(world: World) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    alice.remember("note under epoch 2")
    world.sync_all(1)
    roster = admin.rotate(adm.t, PROJECT, now=adm.clock())
    epoch = roster.projects[PROJECT]
    alice.sync()
    bob.sync()
    mem = alice.remember("note under the rotated key")
    alice.sync()
    bob.sync()
    assert mem.id in bob.memories()
    own = replica.load_own_chain(alice.store.connection, PROJECT)
    assert own is not None
    assert f'"epoch":{epoch}' in own.manifest.decode()

    admin.grant(adm.t, "bob", "infra", read=True, write=False, now=adm.clock(), create=True)
    bob.sync()
    access = bob.t.status()["my_access"]["infra"]
    assert (access["read"], access["write"], access["key"]) == (True, False, True)
    with pytest.raises(InputError, match="is not a member"):
        admin.grant(adm.t, "mallory", PROJECT, read=True, write=True, now=adm.clock())
    with pytest.raises(InputError, match="not an admin"):
        admin.rotate(bob.t, PROJECT, now=bob.clock())


@pytest.mark.slow
def test_issued_key_bundle_joins_without_a_request(world: World) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    mem = alice.remember("for the new hire")
    alice.sync()
    bundle, made = admin.issue(
        adm.t, "dave", passphrase="correct horse battery", projects=[PROJECT], read=True,
        write=True, now=adm.clock(), kdf=KDF_INTERACTIVE,
    )  # fmt: skip
    assert adm.t.roster().member(made.kid).issued_by_admin  # type: ignore[union-attr]
    home = world.root / "dave"
    home.mkdir()
    with pytest.raises(Exception, match="passphrase"):
        MemberKey.import_bundle(bundle, "wrong passphrase")
    key = import_member_key(home, MemberKey.import_bundle(bundle, "correct horse battery"))
    assert key.kid == made.kid
    inv = read_invite(admin.invite(adm.t, adm.clock()), now=adm.clock())
    join_team(home, inv, key, name="dave", post_request=False, now=adm.clock())
    assert adm.t.transport.requests() == {}
    store = MemoryStore.open(home / "store.db", author=key.kid)
    world.nodes["dave"] = dave = Node("dave", home, key, store)
    dave.team = Team.open(home, store, key)
    first = dave.sync()  # the issue re-wrapped the current key: no writer must sync first
    assert mem.id in dave.memories()
    assert not any("holds no key" in w for w in first.warnings), first.warnings
    assert dave.t.status()["members"][-1]["issued_by_admin"] is True


@pytest.mark.slow
def test_restored_writer_is_refused_until_an_admin_resets_its_chain(world: World) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    alice.remember("alice before losing her store")
    bob.remember("bob publishes too, witnessing alice's chain")
    world.sync_all(2)
    # alice loses her store, and the folder copy of her chain is gone too (restored backup)
    alice.store.close()
    for suffix in ("", "-wal", "-shm"):
        (alice.home / f"store.db{suffix}").unlink(missing_ok=True)
    for path in (world.folder).rglob(f"{alice.key.kid}/manifest-*.json"):
        path.unlink()
    alice.store = MemoryStore.open(alice.home / "store.db", author=alice.key.kid)
    alice.team = Team.open(alice.home, alice.store, alice.key)
    fresh = alice.remember("alice after the restore")
    held = alice.sync()  # a chain teammates witness that no one serves: publish nothing
    assert any(w.startswith("behind-witness:") and "reset-writer" in w for w in held.warnings)
    assert not list(world.folder.rglob(f"{alice.key.kid}/manifest-*.json"))
    assert bob.sync().refused == []
    assert fresh.id not in bob.memories()

    admin.reset_writer(adm.t, "alice", now=adm.clock())
    alice.sync()
    accepted = bob.sync()
    assert accepted.refused == []
    assert fresh.id in bob.memories()


def test_own_manifest_left_by_an_interrupted_push_is_adopted(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    alice.remember("pushed, but the local record of the push was lost")
    alice.sync()
    alice.store.connection.execute("DELETE FROM own_chain")  # as if killed before recording
    alice.remember("the next note")
    alice.sync()
    summary = bob.sync()
    assert summary.refused == []
    assert summary.pulled_new == 2


def test_old_chunks_are_collected_only_after_the_grace_period(world: World) -> None:
    alice = world.nodes["alice"]
    alice.remember("version one of the notes")
    alice.sync()
    chunk_dir = next(world.folder.rglob(f"{alice.key.kid}/chunks"))
    first = set(os.listdir(chunk_dir))
    alice.remember("version one of the notes", keywords=["edited"])  # rewrites that bucket
    summary = alice.sync()
    assert summary.pushed_chunks == 1
    assert summary.collected_chunks == 0  # unreferenced now, but within the grace period
    assert first < set(os.listdir(chunk_dir))
    object.__setattr__(alice.t.config, "gc_grace_ms", 0)
    for name in first:
        os.utime(chunk_dir / name, (0, 0))
    alice.remember("version one of the notes", keywords=["again"])
    summary = alice.sync()
    own = replica.load_own_chain(alice.store.connection, PROJECT)
    assert own is not None
    listed = set(os.listdir(chunk_dir))
    assert summary.collected_chunks >= 1
    assert all(c in own.manifest.decode() for c in listed)


def test_join_is_refused_twice_and_bad_invites_are_explained(world: World, tmp_path: Path) -> None:
    alice = world.nodes["alice"]
    now = world.nodes["admin"].clock()
    inv = read_invite(admin.invite(world.nodes["admin"].t, now), now=now)
    with pytest.raises(InputError, match="already in a team"):
        join_team(alice.home, inv, alice.key, name="alice", now=now)
    with pytest.raises(InputError, match="not a sealmem invite"):
        read_invite("hello", now=now)
    good = admin.invite(world.nodes["admin"].t, now)
    with pytest.raises(InputError, match="damaged or forged"):
        read_invite(good[:-6] + ("A" if good[-6] != "A" else "B") + good[-5:], now=now)
    with pytest.raises(InputError, match="root key"):
        admin.invite(alice.t, 0)


def test_client_revoke_grant_and_new_project_follow_protocol_admin(world: World) -> None:
    adm, bob, carol = world.nodes["admin"], world.nodes["bob"], world.nodes["carol"]
    roster = admin.revoke(adm.t, "carol", keep_data=True, now=adm.clock())
    assert [g for g in roster.grants if g.kid == carol.key.kid] == []  # grants go with it
    with pytest.raises(InputError, match="revoked in roster"):
        admin.grant(adm.t, "carol", PROJECT, read=True, write=True, now=adm.clock())
    assert adm.t.roster().version == roster.version  # nothing published

    roster = admin.grant(
        adm.t, "bob", "infra", read=True, write=False, now=adm.clock(), create=True
    )
    assert roster.projects["infra"] == 1
    assert roster.can_read(adm.key.kid, "infra")  # every admin gets a new project
    assert roster.can_write(adm.key.kid, "infra")
    assert {m.name for m in roster.readers("infra")} == {"admin", "bob"}
    bob.sync()
    assert adm.t.content_key(adm.t.trusted(), "infra", 1) is not None
    assert bob.t.content_key(bob.t.trusted(), "infra", 1) is not None
