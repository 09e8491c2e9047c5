"""Private memories follow the member over a real hub on 127.0.0.1 (SPEC "Private
memories and trust follow the member"): the hub serves alice's private space only to
alice's devices, and a device writes only its own private chains."""

from __future__ import annotations

import pytest

from sealmem.client.sync.hub_answers import HubError
from sealmem.protocol import hubapi
from tests.sync.device_runs import add_device

from .conftest import PROJECT, HubWorld
from .test_devices_hub import hub_team

pytestmark = pytest.mark.slow


def _private(node: object) -> set[str]:
    rows = node.store.connection.execute(  # type: ignore[attr-defined]
        "SELECT content FROM memories WHERE visibility = 'private' AND deleted = 0"
    )
    return {str(r[0]) for r in rows}


def test_private_memories_follow_the_member_over_a_hub_and_no_one_else(world: HubWorld) -> None:
    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    world.sync_all(1)
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, hub_team(world))
    alice.remember("laptop: my private note on the deploy key", private=True)
    desktop.remember("desktop: my private note on the staging box", private=True)
    for _ in range(2):
        for node in (alice, desktop, bob):
            node.sync()
    assert "laptop: my private note on the deploy key" in _private(desktop)
    assert "desktop: my private note on the staging box" in _private(alice)
    text = bob.store.connection.execute("SELECT content FROM memories").fetchall()
    assert not [r for r in text if "my private note" in r[0]]
    # bob asking for alice's private space is refused by code, whatever he asks for
    space = bob.t.transport.private_space(alice.key.kid)
    assert space is not None
    for ask in (
        space.member_keyrings,
        lambda: space.chain_projects(alice.key.kid),
        lambda: space.newest_manifest(PROJECT, alice.key.kid),
    ):
        with pytest.raises(HubError) as info:
            ask()
        assert info.value.code == hubapi.NO_GRANT
    # the desktop reads the laptop's chain, but writes only its own
    sibling = desktop.t.transport.private_space(alice.key.kid)
    assert sibling is not None
    manifest = sibling.newest_manifest(PROJECT, alice.key.kid)
    assert manifest is not None
    with pytest.raises(HubError) as info:
        sibling.push(PROJECT, alice.key.kid, 99, manifest, {})
    assert info.value.code == hubapi.NOT_YOUR_SLOT
    # the team routes never serve a private slot: bob's manifests list holds no private one
    assert alice.key.kid not in bob.t.transport.manifests(PROJECT) or all(
        b'"sealmem/private-manifest/' not in m
        for m in bob.t.transport.manifests(PROJECT)[alice.key.kid]
    )


def test_trust_set_on_one_device_applies_on_the_other_over_a_hub(world: HubWorld) -> None:
    from sealmem.client.clock import now_ms
    from sealmem.client.recall.standing import Reader
    from sealmem.client.store.trust_rows import save_member_state

    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    world.sync_all(1)
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, hub_team(world))
    for node in (alice, desktop):
        node.sync()
    save_member_state(alice.store.connection, bob.key.kid, "muted", now_ms())
    alice.sync()
    desktop.sync()
    reader = Reader(desktop.store.connection, desktop.key.kid, now_ms())
    assert reader.state_of(bob.key.kid) == "muted"
    space = bob.t.transport.private_space(alice.key.kid)
    assert space is not None
    with pytest.raises(HubError) as info:
        space.trust(alice.key.kid)
    assert info.value.code == hubapi.NO_GRANT


def test_a_team_project_named_like_a_members_private_slot_is_refused(world: HubWorld) -> None:
    from sealmem.client.clock import now_ms
    from sealmem.client.team.admin import grant

    admin, alice = world.nodes["admin"], world.nodes["alice"]
    world.sync_all(1)
    # an admin registers a project named as alice's member keyring slot: its first team
    # keyring would take epoch 1 of her private space on the hub, and bob would see her
    # private pushes in the change feed
    with pytest.raises(HubError) as info:
        grant(admin.t, "bob", f"p-{alice.key.kid}", read=True, write=True, now=now_ms(),
              create=True)  # fmt: skip
    assert info.value.code == hubapi.BAD_REQUEST
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, hub_team(world))
    alice.remember("laptop: private, beside the admin's project", private=True)
    said = [alice.sync(), desktop.sync(), alice.sync(), desktop.sync()]
    assert [r for s in said for r in s.refused] == []
    assert "laptop: private, beside the admin's project" in _private(desktop)


def test_two_devices_making_the_first_member_keyring_at_once_do_not_fork(
    world: HubWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sealmem.client.sync.hub_private import PrivateSpaceCalls

    admin, alice = world.nodes["admin"], world.nodes["alice"]
    world.sync_all(1)
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, hub_team(world))
    read = PrivateSpaceCalls.member_keyrings
    armed = [True]

    def laptop_meanwhile(self: PrivateSpaceCalls) -> list[bytes]:
        found = read(self)  # type: ignore[arg-type]
        if armed and armed.pop():
            alice.sync()  # the laptop makes epoch 1 between the desktop's read and put
        return found

    monkeypatch.setattr(PrivateSpaceCalls, "member_keyrings", laptop_meanwhile)
    desktop.sync()
    assert not armed  # the laptop did sync in between
    monkeypatch.undo()
    alice.remember("laptop: private, after the race", private=True)
    desktop.remember("desktop: private, after the race", private=True)
    said = [desktop.sync(), alice.sync(), desktop.sync(), alice.sync()]
    assert [r for s in said for r in s.refused] == []
    assert "laptop: private, after the race" in _private(desktop)
    assert "desktop: private, after the race" in _private(alice)
