"""A newcomer reads what the team already wrote: approving wraps the older epochs too.

Real members, real stores, one folder.  The admin rotates a project (or revokes a
member, which rotates), then approves dave: dave's first sync reads the snapshots
still published under the older epoch (a writer that has not synced since, the
pinned manifest of a revoked member), unless the admin approved ``--from-now``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sealmem.client.sync import replica
from sealmem.client.sync.session import Team
from sealmem.client.team import admin, approval, publish
from sealmem.client.team.invite import read_invite
from sealmem.client.team.join import join_team
from sealmem.crypto import KDF_INTERACTIVE, SUITE, MemberKey
from sealmem.protocol.keyring import Keyring
from sealmem.protocol.keyring import peek as peek_keyring
from tests.support.cli import Run, in_process
from tests.sync.conftest import PROJECT, Node, World


def _keyring_file(world: World, epoch: int, project: str = PROJECT) -> Keyring:
    team = world.nodes["admin"].t.config.team
    path = world.folder / "sealmem" / team / "keyrings" / project / f"{epoch:010d}.json"
    return peek_keyring(path.read_bytes())


def _keyring_path(world: World, epoch: int) -> str:
    team = world.nodes["admin"].t.config.team
    return str(world.folder / "sealmem" / team / "keyrings" / PROJECT / f"{epoch:010d}.json")


def _approve(world: World, name: str, **kw: object) -> Node:
    """``name`` posts a join request and the admin approves it (``kw`` to ``approve``)."""
    adm = world.nodes["admin"]
    node = world.node(name)
    inv = read_invite(admin.invite(adm.t, adm.clock()), now=adm.clock())
    join_team(node.home, inv, node.key, name=name, now=node.clock())
    approval.approve(adm.t, [node.key.kid], projects=None, read=True, write=True,
                  now=adm.clock(), **kw)  # type: ignore[arg-type]  # fmt: skip
    node.team = Team.open(node.home, node.store, node.key)
    return node


def _alice_writes_then_admin_rotates(world: World) -> str:
    """alice writes under epoch 1 and does not sync after the rotation to epoch 2."""
    adm, alice = world.nodes["admin"], world.nodes["alice"]
    mem = alice.remember("the staging database is rebuilt every Monday at 06:00")
    alice.sync()
    admin.rotate(adm.t, PROJECT, now=adm.clock())
    assert adm.t.roster().projects[PROJECT] == 2
    return mem.id


@pytest.mark.slow
def test_a_member_approved_after_a_rotation_reads_the_older_epoch(world: World) -> None:
    adm, bob = world.nodes["admin"], world.nodes["bob"]
    old = _alice_writes_then_admin_rotates(world)
    before = _keyring_file(world, 1)

    dave = _approve(world, "dave")
    roster = adm.t.roster()
    assert roster.projects[PROJECT] == 2  # approving starts no new epoch
    history = _keyring_file(world, 1)
    assert history.key_id == before.key_id  # the same key, re-published
    assert history.roster_version == roster.version
    assert set(history.wraps) == set(before.wraps) | {dave.key.kid}
    assert dave.key.kid in _keyring_file(world, 2).wraps

    first = dave.sync()
    assert first.refused == [], first.to_dict()
    assert old in dave.memories()  # alice's epoch-1 snapshot, read at once
    state = dave.t.trusted()
    assert state.roster is not None
    assert state.roster.projects[PROJECT] == 2
    assert state.keyring(PROJECT, 1) == history
    assert dave.t.content_key(state, PROJECT, 1) is not None

    # the others take the older epoch's update and keep it across a reload
    assert bob.sync().refused == []
    reloaded = replica.load_state(
        bob.store.connection, SUITE, bob.t.config.team, bob.t.config.root_public
    )
    assert reloaded.keyring(PROJECT, 1) == history
    assert reloaded.roster is not None
    assert reloaded.roster.projects[PROJECT] == 2

    # writers keep writing under the current epoch, never the older one
    fresh = dave.remember("dave writes under the current epoch")
    assert dave.sync().refused == []
    assert replica.load_own_chain(dave.store.connection, PROJECT) is not None
    bob.sync()
    assert fresh.id in bob.memories()
    heads = {
        str(r[0]): int(r[1])
        for r in bob.store.connection.execute(
            "SELECT writer, epoch FROM chain_heads WHERE project = ?", (PROJECT,)
        )
    }
    assert heads[dave.key.kid] == 2


def test_from_now_wraps_only_the_current_epoch(world: World) -> None:
    old = _alice_writes_then_admin_rotates(world)
    before = _keyring_file(world, 1)
    dave = _approve(world, "dave", from_now=True)
    assert _keyring_file(world, 1) == before  # the older epoch is not re-published
    assert dave.key.kid in _keyring_file(world, 2).wraps
    summary = dave.sync()
    assert summary.refused == []
    assert old not in dave.memories()
    assert dave.t.content_key(dave.t.trusted(), PROJECT, 1) is None
    later = world.nodes["alice"].remember("written after dave joined")
    world.nodes["alice"].sync()  # alice re-publishes under epoch 2: dave reads it all now
    dave.sync()
    assert later.id in dave.memories()


@pytest.mark.slow
def test_a_revoked_members_pinned_manifest_is_read_by_a_later_newcomer(world: World) -> None:
    adm, alice, carol = world.nodes["admin"], world.nodes["alice"], world.nodes["carol"]
    by_alice = alice.remember("release notes live in docs/releases")
    by_carol = carol.remember("the flaky test is test_upload_resume; retry once")
    world.sync_all(1)
    adm.sync()  # the admin accepted carol's manifest: revoking pins it
    admin.revoke(adm.t, "carol", keep_data=True, now=adm.clock())
    assert adm.t.roster().projects[PROJECT] == 2

    dave = _approve(world, "dave")
    first = dave.sync()
    assert first.refused == [], first.to_dict()
    assert {by_alice.id, by_carol.id} <= set(dave.memories())  # both under epoch 1
    assert dave.memories()[by_carol.id].provenance.signer == carol.key.kid

    # a revoked member never gets a wrap: not of the new epoch, not of the history
    for epoch in (1, 2):
        assert carol.key.kid not in _keyring_file(world, epoch).wraps, epoch
    assert dave.key.kid in _keyring_file(world, 1).wraps
    carol.sync()
    assert carol.t.content_key(carol.t.trusted(), PROJECT, 2) is None


def test_a_read_grant_wraps_the_history_of_that_project(world: World) -> None:
    adm = world.nodes["admin"]
    old = _alice_writes_then_admin_rotates(world)
    erin = world.node("erin")
    inv = read_invite(admin.invite(adm.t, adm.clock()), now=adm.clock())
    join_team(erin.home, inv, erin.key, name="erin", now=erin.clock())
    approval.approve(adm.t, ["erin"], projects=["shared"], read=True, write=True, now=adm.clock())
    erin.team = Team.open(erin.home, erin.store, erin.key)
    assert erin.key.kid not in _keyring_file(world, 1).wraps
    erin.sync()
    assert old not in erin.memories()

    admin.grant(adm.t, "erin", PROJECT, read=True, write=False, now=adm.clock())
    assert erin.key.kid in _keyring_file(world, 1).wraps
    assert erin.sync().refused == []
    assert old in erin.memories()


@pytest.mark.slow
def test_an_issued_member_is_wrapped_the_history_unless_from_now(world: World) -> None:
    adm = world.nodes["admin"]
    _alice_writes_then_admin_rotates(world)
    kw = {"passphrase": "a long passphrase", "projects": None, "read": True, "write": True}
    bundle, made = admin.issue(adm.t, "frank", now=adm.clock(), kdf=KDF_INTERACTIVE, **kw)  # type: ignore[arg-type]
    assert MemberKey.import_bundle(bundle, "a long passphrase").kid == made.kid
    assert made.kid in _keyring_file(world, 1).wraps
    _, later = admin.issue(adm.t, "gina", now=adm.clock(), kdf=KDF_INTERACTIVE, from_now=True, **kw)  # type: ignore[arg-type]
    assert later.kid not in _keyring_file(world, 1).wraps
    assert later.kid in _keyring_file(world, 2).wraps


@pytest.mark.slow
def test_a_newcomer_that_first_sees_the_old_history_keyring_picks_up_the_update_later(
    world: World,
) -> None:
    """A folder service may deliver the new roster before the re-published older keyring."""
    old = _alice_writes_then_admin_rotates(world)
    with open(_keyring_path(world, 1), "rb") as f:
        stale = f.read()
    dave = _approve(world, "dave")
    with open(_keyring_path(world, 1), "rb") as f:
        update = f.read()
    with open(_keyring_path(world, 1), "wb") as f:
        f.write(stale)  # the update has not reached dave's machine yet
    lagging = dave.sync()
    assert lagging.refused == []
    assert old not in dave.memories()
    assert dave.t.content_key(dave.t.trusted(), PROJECT, 1) is None
    with open(_keyring_path(world, 1), "wb") as f:
        f.write(update)  # it arrives; no roster version moves in between
    assert dave.sync().refused == []
    assert old in dave.memories()


@pytest.mark.slow
def test_an_epoch_the_admin_cannot_unwrap_is_skipped_and_named(world: World) -> None:
    adm = world.nodes["admin"]
    admin.grant(adm.t, "admin", "shared", read=False, write=False, now=adm.clock())  # epoch 2
    admin.grant(adm.t, "admin", "shared", read=True, write=True, now=adm.clock())  # epoch 3
    assert adm.t.roster().projects["shared"] == 3
    assert publish.missing_history(adm.t) == {"shared": [2]}
    assert publish.missing_history(adm.t, [PROJECT]) == {}
    dave = _approve(world, "dave")
    keyrings = {k.epoch: k for k in (_keyring_file(world, e, "shared") for e in (1, 2, 3))}
    assert dave.key.kid in keyrings[1].wraps
    assert dave.key.kid in keyrings[3].wraps
    assert dave.key.kid not in keyrings[2].wraps
    assert dave.sync().refused == []


# -- the CLI -------------------------------------------------------------------------


@pytest.fixture
def as_admin(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Run]:
    monkeypatch.setenv("SEALMEM_HOME", str(world.nodes["admin"].home))
    return in_process(capsys, monkeypatch)


def _request(world: World, name: str) -> Node:
    adm = world.nodes["admin"]
    node = world.node(name)
    inv = read_invite(admin.invite(adm.t, adm.clock()), now=adm.clock())
    join_team(node.home, inv, node.key, name=name, now=node.clock())
    return node


@pytest.mark.slow
def test_cli_approve_from_now_and_the_warning_for_epochs_it_cannot_wrap(
    world: World, as_admin: Callable[..., Run]
) -> None:
    adm = world.nodes["admin"]
    old = _alice_writes_then_admin_rotates(world)
    admin.grant(adm.t, "admin", "shared", read=False, write=False, now=adm.clock())
    admin.grant(adm.t, "admin", "shared", read=True, write=True, now=adm.clock())
    run = as_admin

    dave = _request(world, "dave")
    assert run("admin", "requests").code == 0  # an approval is bound to what was shown
    done = run("admin", "approve", dave.key.kid, "--from-now", "--json")
    assert done.code == 0, done.err
    assert done.json()["warnings"] == []  # --from-now: nothing older was to be wrapped
    dave.team = Team.open(dave.home, dave.store, dave.key)
    dave.sync()
    assert old not in dave.memories()

    erin = _request(world, "erin")
    assert run("admin", "requests").code == 0
    done = run("admin", "approve", erin.key.kid, "-p", PROJECT)  # -p brings shared along
    assert done.code == 0, done.err
    assert "'webapp'" not in done.err  # this admin holds every epoch of webapp
    assert "epoch(s) 2 of 'shared' were not wrapped to the new readers" in done.err
    erin.team = Team.open(erin.home, erin.store, erin.key)
    erin.sync()
    assert old in erin.memories()

    again = run("admin", "grant", "erin", "shared", "--json")  # already a reader
    assert again.code == 0, again.err
    assert again.json()["warnings"] == []

    frank = _request(world, "frank")
    assert run("admin", "requests").code == 0
    done = run("admin", "approve", frank.key.kid)
    assert done.code == 0, done.err
    assert "epoch(s) 2 of 'shared' were not wrapped" in done.err
    assert "'webapp'" not in done.err
