"""Approving a reader re-wraps the current key: no new epoch, the newcomer reads at once."""

from __future__ import annotations

from dataclasses import replace

from sealmem.client.sync import replica
from sealmem.client.team import admin
from sealmem.crypto import SUITE, ContentKey
from sealmem.protocol import reasons
from sealmem.protocol.keyring import Keyring
from sealmem.protocol.keyring import peek as peek_keyring
from tests.sync.conftest import PROJECT, World


def _folder_keyring(world: World, epoch: int) -> Keyring:
    """The keyring file of ``epoch`` as the folder holds it now (one per epoch)."""
    path = world.folder / "sealmem" / world.nodes["admin"].t.config.team / "keyrings"
    data = (path / PROJECT / f"{epoch:010d}.json").read_bytes()
    return peek_keyring(data)


def test_a_member_approved_after_data_exists_reads_it_after_its_own_first_sync(
    world: World,
) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember("the deploy key lives in the vault, not in the repo")
    alice.sync()
    bob.sync()
    epoch = adm.t.roster().projects[PROJECT]
    before = _folder_keyring(world, epoch)

    (dave,) = world.add_members("dave")
    roster = adm.t.roster()
    assert roster.projects[PROJECT] == epoch  # approving a reader starts no new epoch
    after = _folder_keyring(world, epoch)
    assert after.key_id == before.key_id
    assert after.roster_version == roster.version > before.roster_version
    assert set(after.wraps) == set(before.wraps) | {dave.key.kid}

    first = dave.sync()  # no writer synced since the approval
    assert first.refused == [], first.to_dict()
    assert mem.id in dave.memories()

    # an existing member takes the re-published keyring, and keeps it across a reload
    assert bob.sync().refused == []
    assert bob.t.trusted().keyring(PROJECT, epoch) == after
    reloaded = replica.load_state(
        bob.store.connection, SUITE, bob.t.config.team, bob.t.config.root_public
    )
    assert reloaded.keyring(PROJECT, epoch) == after
    assert bob.t.content_key(bob.t.trusted(), PROJECT, epoch) == dave.t.content_key(
        dave.t.trusted(), PROJECT, epoch
    )


def test_revoking_the_newcomer_still_rotates_and_it_cannot_read_later_writes(
    world: World,
) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    alice.remember("before dave")
    alice.sync()
    epoch = adm.t.roster().projects[PROJECT]
    (dave,) = world.add_members("dave")
    dave.sync()
    roster = admin.revoke(adm.t, "dave", keep_data=False, now=adm.clock())
    assert roster.projects[PROJECT] == epoch + 1
    later = alice.remember("after dave left")
    alice.sync()
    dave.sync()
    assert later.id not in dave.memories()
    assert dave.t.content_key(dave.t.trusted(), PROJECT, epoch + 1) is None
    newest = _folder_keyring(world, epoch + 1)
    assert dave.key.kid not in newest.wraps
    assert newest.key_id != _folder_keyring(world, epoch).key_id


def test_an_admin_without_the_current_key_falls_back_to_a_new_epoch(world: World) -> None:
    adm = world.nodes["admin"]
    admin.grant(adm.t, "admin", "shared", read=False, write=False, now=adm.clock())
    shared = adm.t.roster().projects["shared"]
    assert adm.t.content_key(adm.t.trusted(), "shared", shared) is None
    webapp = adm.t.roster().projects[PROJECT]
    world.add_members("dave")
    roster = adm.t.roster()
    assert roster.projects["shared"] == shared + 1  # could not re-wrap: rotated
    assert roster.projects[PROJECT] == webapp  # could: extended


def test_a_wrap_that_does_not_match_key_id_is_refused_as_tampered(world: World) -> None:
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    mem = alice.remember("only for the real key")
    alice.sync()
    (dave,) = world.add_members("dave")
    epoch = adm.t.roster().projects[PROJECT]
    honest = _folder_keyring(world, epoch)
    other = ContentKey.generate()
    forged = replace(
        honest, wraps={**honest.wraps, dave.key.kid: other.wrap_to(dave.key.box_public)}
    )
    adm.t.transport.put_keyring(PROJECT, epoch, forged.sign(adm.key))
    summary = dave.sync()
    assert reasons.TAMPERED in {r.reason for r in summary.refused}, summary.to_dict()
    assert mem.id not in dave.memories()


def test_a_newcomer_that_first_sees_the_old_keyring_picks_up_the_update_later(
    world: World,
) -> None:
    """A folder service may deliver the new roster before the re-published keyring."""
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    mem = alice.remember("written before dave joined")
    alice.sync()
    epoch = adm.t.roster().projects[PROJECT]
    path = (
        world.folder / "sealmem" / adm.t.config.team / "keyrings" / PROJECT / f"{epoch:010d}.json"
    )
    old = path.read_bytes()
    (dave,) = world.add_members("dave")
    new = path.read_bytes()
    path.write_bytes(old)  # the update has not arrived on dave's machine yet
    lagging = dave.sync()
    assert mem.id not in dave.memories()
    assert dave.t.trusted().keyring(PROJECT, epoch) is not None  # the old one, without dave
    assert dave.t.content_key(dave.t.trusted(), PROJECT, epoch) is None
    assert lagging.refused == []
    path.write_bytes(new)  # it arrives; no roster version moves in between
    assert dave.sync().refused == []
    assert mem.id in dave.memories()
