"""Private memories follow the member over a real folder (SPEC "Private memories and trust
follow the member"): alice's laptop and desktop, each its own home, and teammate bob."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealmem.client.clock import now_ms
from sealmem.client.sync.session import Team
from sealmem.client.team.devices import revoke_device
from sealmem.crypto import SUITE, ContentKey
from sealmem.protocol.errors import DecryptionError
from sealmem.protocol.private import PrivateState, accept_member_keyring

from .conftest import PROJECT, World, make_world
from .device_runs import add_device

pytestmark = pytest.mark.slow


def _open(node: object) -> Team:
    return Team.open(node.home, node.store, node.key)  # type: ignore[attr-defined]


def _private(node: object) -> set[str]:
    rows = node.store.connection.execute(  # type: ignore[attr-defined]
        "SELECT content FROM memories WHERE visibility = 'private' AND deleted = 0"
    )
    return {str(r[0]) for r in rows}


def _space(world: World, member: str) -> Path:
    team = world.nodes["admin"].t.config.team
    return Path(world.folder) / "sealmem" / team / "private" / member


@pytest.fixture
def world(tmp_path: Path) -> World:
    w = make_world(tmp_path, "alice", "bob")
    w.sync_all(1)
    yield w  # type: ignore[misc]
    w.close()


def test_a_member_with_one_device_publishes_no_private_chain(world: World) -> None:
    alice = world.nodes["alice"]
    alice.remember("alice keeps this to herself", private=True)
    alice.sync()
    assert not _space(world, alice.key.kid).exists()


def test_private_memories_reach_the_members_other_device_and_no_one_else(world: World) -> None:
    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    alice.remember("laptop: my private note on the deploy key", private=True)
    desktop.remember("desktop: my private note on the staging box", private=True)
    for _ in range(2):
        for node in (alice, desktop, bob, admin):
            node.sync()
    assert "laptop: my private note on the deploy key" in _private(desktop)
    assert "desktop: my private note on the staging box" in _private(alice)
    row = desktop.store.connection.execute(
        "SELECT editor, visibility FROM memories WHERE content LIKE 'laptop: my private%'"
    ).fetchone()
    assert tuple(row) == (alice.key.kid, "private")  # provenance: the device that wrote it
    for other in (bob, admin):
        assert not {t for t in _private(other) if "my private note" in t}
        text = other.store.connection.execute("SELECT content FROM memories").fetchall()
        assert not [r for r in text if "my private note" in r[0]]
    # the member keyring wraps alice's two devices only: bob's key opens nothing
    space = _space(world, alice.key.kid)
    data = sorted((space / "keyrings").iterdir())[-1].read_bytes()
    _, ring = accept_member_keyring(SUITE, bob.t.trusted(), PrivateState(), data)
    assert set(ring.wraps) == {alice.key.kid, desktop.key.kid}
    for wrap in ring.wraps.values():
        with pytest.raises(DecryptionError):
            ContentKey.unwrap(wrap, bob.key)
    # the private chain holds private manifests only
    manifests = list((space / alice.key.kid / PROJECT).glob("manifest-*.json"))
    assert manifests
    for f in manifests:
        assert json.loads(f.read_text())["body"]["format"] == "sealmem/private-manifest/v1"


def test_a_revoked_device_cannot_read_private_records_written_after(world: World) -> None:
    admin, alice = world.nodes["admin"], world.nodes["alice"]
    desktop, phone = world.node("desktop"), world.node("phone")
    add_device(alice, desktop, admin, _open)
    add_device(alice, phone, admin, _open, name="phone")
    for node in (alice, desktop, phone, alice):
        node.sync()
    admin.sync()
    revoke_device(admin.t, "desktop", member="alice", now=now_ms())
    alice.sync()
    alice.remember("laptop: private, written after the desktop was revoked", private=True)
    for node in (alice, phone, desktop, alice, phone):
        node.sync()
    assert "laptop: private, written after the desktop was revoked" in _private(phone)
    assert "laptop: private, written after the desktop was revoked" not in _private(desktop)
    # the newest epoch, which carries it, is not wrapped to the revoked device
    space = _space(world, alice.key.kid)
    newest = sorted((space / "keyrings").iterdir())[-1]
    body = json.loads(newest.read_text())["body"]
    assert body["epoch"] >= 2
    assert desktop.key.kid not in body["wraps"]
    assert set(body["wraps"]) == {alice.key.kid, phone.key.kid}


def test_a_planted_private_manifest_is_refused_by_name_and_the_rest_goes_on(
    world: World,
) -> None:
    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    bob.remember("bob: a team memory of his", private=False)
    bob.sync()
    alice.remember("laptop: private before the planting", private=True)
    alice.sync()
    desktop.sync()
    # bob plants his own team manifest as the laptop's newest private manifest
    team = Path(world.folder) / "sealmem" / admin.t.config.team
    theirs = sorted((team / "snapshots" / PROJECT / bob.key.kid).glob("manifest-*.json"))[-1]
    chain = _space(world, alice.key.kid) / alice.key.kid / PROJECT
    (chain / "manifest-000000000099.json").write_bytes(theirs.read_bytes())
    said = desktop.sync()
    refused = {(r.reason, r.object) for r in said.refused}
    assert ("malformed", f"private chain {alice.key.kid}/{PROJECT}") in refused, refused
    assert "laptop: private before the planting" in _private(desktop)
    assert "bob: a team memory of his" in {
        str(r[0]) for r in desktop.store.connection.execute("SELECT content FROM memories")
    }


def test_a_restored_device_continues_its_private_chain(world: World) -> None:
    admin, alice = world.nodes["admin"], world.nodes["alice"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    alice.remember("laptop: private, first", private=True)
    alice.sync()
    with alice.store.connection:  # what a store restored from before that push lacks
        alice.store.connection.execute("DELETE FROM meta WHERE key = 'private_own'")
    alice.remember("laptop: private, after the restore", private=True)
    said = alice.sync()
    assert not [w for w in said.warnings if "private chain" in w], said.warnings
    desktop.sync()
    assert {"laptop: private, first", "laptop: private, after the restore"} <= _private(desktop)


def test_a_siblings_private_push_wakes_a_watching_device(world: World) -> None:
    from sealmem.client.sync.folder_watch import fingerprint

    admin, alice = world.nodes["admin"], world.nodes["alice"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    alice.sync()
    desktop.sync()
    base = Path(world.folder) / "sealmem" / admin.t.config.team
    before = fingerprint(base, desktop.key.kid)
    alice.remember("laptop: private, while the desktop watches", private=True)
    alice.sync()
    assert fingerprint(base, desktop.key.kid) != before
    # its own pushes do not wake it
    before = fingerprint(base, alice.key.kid)
    alice.remember("laptop: private, once more", private=True)
    alice.sync()
    assert fingerprint(base, alice.key.kid) == before


def test_trust_set_on_the_laptop_applies_on_the_desktop_last_writer_wins(world: World) -> None:
    from sealmem.client.recall.standing import Reader
    from sealmem.client.store.trust_rows import save_member_state

    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    for node in (alice, desktop):
        node.sync()
    save_member_state(alice.store.connection, bob.key.kid, "muted", now_ms())
    alice.sync()
    desktop.sync()
    assert Reader(desktop.store.connection, desktop.key.kid, now_ms()).state_of(bob.key.kid) == (
        "muted"
    )
    # a later decision on the desktop wins on the laptop too; bob's own view is untouched
    save_member_state(desktop.store.connection, bob.key.kid, "trusted", now_ms() + 10)
    desktop.sync()
    alice.sync()
    for node in (alice, desktop):
        state = Reader(node.store.connection, node.key.kid, now_ms()).state_of(bob.key.kid)
        assert state == "trusted", node.name
    bob.sync()
    assert not bob.store.connection.execute("SELECT 1 FROM member_trust").fetchall()
    # the decisions travel sealed: the file names no state in clear
    data = (_space(world, alice.key.kid) / "trust" / f"{desktop.key.kid}.json").read_bytes()
    assert b"trusted" not in data
    assert bob.key.kid.encode() not in data


def test_a_keyring_its_revoked_signer_made_before_is_not_refused_again(world: World) -> None:
    admin, alice = world.nodes["admin"], world.nodes["alice"]
    desktop, phone = world.node("desktop"), world.node("phone")
    add_device(alice, desktop, admin, _open)
    desktop.sync()  # the desktop makes epoch 1
    add_device(alice, phone, admin, _open, name="phone")
    for node in (desktop, alice, phone):
        node.sync()
    admin.sync()
    revoke_device(admin.t, "desktop", member="alice", now=now_ms())
    alice.remember("laptop: private, after the desktop's revocation", private=True)
    said = [alice.sync(), phone.sync(), alice.sync(), phone.sync()]
    refused = [r for s in said for r in s.refused if "keyring" in r.object]
    assert refused == [], refused
    assert "laptop: private, after the desktop's revocation" in _private(phone)


def test_a_decision_stamped_by_a_clock_running_ahead_does_not_outlive_a_later_mute(
    world: World,
) -> None:
    from sealmem.client.recall.standing import Reader
    from sealmem.client.store.trust_rows import save_member_state

    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    for node in (alice, desktop):
        node.sync()
    years_ahead = now_ms() + 10 * 365 * 24 * 3600 * 1000  # the desktop's clock is wrong
    save_member_state(desktop.store.connection, bob.key.kid, "trusted", years_ahead)
    desktop.sync()
    alice.sync()
    save_member_state(alice.store.connection, bob.key.kid, "muted", now_ms())  # later
    alice.sync()
    desktop.sync()
    for node in (alice, desktop):
        state = Reader(node.store.connection, node.key.kid, now_ms()).state_of(bob.key.kid)
        assert state == "muted", node.name


def test_two_devices_making_the_first_member_keyring_at_once_do_not_fork(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sealmem.client.sync.folder import FolderTransport

    admin, alice = world.nodes["admin"], world.nodes["alice"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    read = FolderTransport.member_keyrings
    armed = [True]

    def laptop_meanwhile(self: FolderTransport) -> list[bytes]:
        found = read(self)
        if armed and armed.pop():
            alice.sync()  # the laptop makes epoch 1 between the desktop's read and write
        return found

    monkeypatch.setattr(FolderTransport, "member_keyrings", laptop_meanwhile)
    desktop.sync()
    assert not armed  # the laptop did sync in between
    monkeypatch.undo()
    alice.remember("laptop: private, after the race", private=True)
    desktop.remember("desktop: private, after the race", private=True)
    said = [desktop.sync(), alice.sync(), desktop.sync(), alice.sync()]
    assert [r for s in said for r in s.refused] == []
    assert "laptop: private, after the race" in _private(desktop)
    assert "desktop: private, after the race" in _private(alice)
    assert [f.name for f in (_space(world, alice.key.kid) / "keyrings").iterdir()] == [
        "0000000001.json"
    ]


def test_a_device_added_later_is_wrapped_the_current_key_in_place(world: World) -> None:
    admin, alice = world.nodes["admin"], world.nodes["alice"]
    desktop, phone = world.node("desktop"), world.node("phone")
    add_device(alice, desktop, admin, _open)
    alice.remember("laptop: private, before the phone", private=True)
    for node in (alice, desktop):
        node.sync()
    add_device(alice, phone, admin, _open, name="phone")
    said = [node.sync() for node in (alice, phone, desktop, alice, phone)]
    assert [r for s in said for r in s.refused] == []
    assert "laptop: private, before the phone" in _private(phone)
    # the update replaced the file of epoch 1: same epoch, now wrapped to the phone too
    files = sorted((_space(world, alice.key.kid) / "keyrings").iterdir())
    assert [f.name for f in files] == ["0000000001.json"]
    assert set(json.loads(files[0].read_text())["body"]["wraps"]) == {
        alice.key.kid,
        desktop.key.kid,
        phone.key.kid,
    }
