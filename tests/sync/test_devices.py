"""A member's devices over a real folder (SPEC "Devices and identity"): two devices of
alice write in turn and both end with every memory, a teammate sees each once; a
revoked device reads nothing written after; device invites refused by name."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sealmem.client.clock import now_ms
from sealmem.client.recall.names import member_names, people
from sealmem.client.recall.standing import Reader
from sealmem.client.recall.trust import OWN
from sealmem.client.sync.session import Team
from sealmem.client.team.approval import approve, show_requests
from sealmem.client.team.devices import (
    device_rows,
    invite_device,
    join_device,
    read_device_invite_text,
    revoke_device,
)
from sealmem.protocol.device_invite import (
    DEVICE_INVITE_PREFIX,
    DeviceInvite,
    seal_device_invite,
    seal_device_join,
)
from sealmem.protocol.encoding import b64e
from sealmem.protocol.errors import InputError

from .conftest import PROJECT, World, make_world
from .device_runs import add_device, alternate_devices, bad_invite_join
from .machines import contents

pytestmark = pytest.mark.slow


def _open(node: object) -> Team:
    return Team.open(node.home, node.store, node.key)  # type: ignore[attr-defined]


@pytest.fixture
def world(tmp_path: Path) -> World:
    w = make_world(tmp_path, "alice", "bob")
    w.sync_all(1)
    yield w  # type: ignore[misc]
    w.close()


def test_two_devices_of_one_member_each_end_with_every_memory(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    desktop = world.node("desktop")
    add_device(alice, desktop, world.nodes["admin"], _open)
    desktop.sync()
    counts = alternate_devices(alice, desktop, bob)
    assert counts == {"written": 6, "alice": 6, "desktop": 6, "bob": 6}
    # a teammate holds each memory once: one row per text, each under the device that wrote it
    rows = bob.store.connection.execute(
        "SELECT content, editor FROM memories WHERE project = ? AND content LIKE '% round %'",
        (PROJECT,),
    ).fetchall()
    assert len(rows) == 6
    assert {r[1] for r in rows} == {alice.key.kid, desktop.key.kid}
    # the roster lists both devices under one member; the sibling's writes are alice's own
    roster = alice.t.roster()
    assert roster.member(desktop.key.kid).id == alice.key.kid  # type: ignore[union-attr]
    assert [r.name for r in device_rows(roster, alice.key.kid)] == ["device 1", "desktop"]
    reader = Reader(alice.store.connection, alice.key.kid, now_ms())
    assert reader.state_of(desktop.key.kid) == OWN
    assert Reader(bob.store.connection, bob.key.kid, now_ms()).state_of(desktop.key.kid) != OWN
    # provenance still names the device; people are named by member
    names = member_names(bob.store.connection)
    assert names[desktop.key.kid] == "alice (desktop)"
    assert names[alice.key.kid] == "alice (device 1)"
    assert people(bob.store.connection)[alice.key.kid] == "alice"


def test_a_revoked_device_reads_nothing_written_after(world: World) -> None:
    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    desktop.remember("desktop: written before the revocation")
    desktop.sync()
    admin.sync()
    roster, device = revoke_device(admin.t, "desktop", member="alice", now=now_ms())
    assert device.kid == desktop.key.kid
    assert roster.revocation(desktop.key.kid) is not None
    assert roster.can_read(alice.key.kid, PROJECT)  # the member keeps its grants
    alice.sync()
    alice.remember("alice: written after the desktop was revoked")
    alice.sync()
    bob.sync()
    said = desktop.sync().warnings
    assert any(w.startswith("this device was revoked") for w in said), said
    assert "alice: written after the desktop was revoked" in contents(bob, PROJECT)
    assert "alice: written after the desktop was revoked" not in contents(desktop, PROJECT)
    # its data stays by default (pinned), for teammates and for its own member
    assert "desktop: written before the revocation" in contents(bob, PROJECT)
    assert "desktop: written before the revocation" in contents(alice, PROJECT)
    epoch = roster.projects[PROJECT]
    assert desktop.key.kid not in alice.t.trusted().keyring(PROJECT, epoch).wraps  # type: ignore[union-attr]


def test_device_invites_are_refused_by_name(world: World, tmp_path: Path) -> None:
    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    line = invite_device(alice.t, "desktop", now_ms())
    # expired: the new machine refuses it by name
    with pytest.raises(InputError, match="expired"):
        read_device_invite_text(line, now=now_ms() + 86_400_001)
    # used twice: the second device answering one invite is refused at approval
    invite, data = read_device_invite_text(line, now=now_ms())
    first, second = world.node("desktop"), world.node("desktop-2")
    join_device(first.home, invite, data, first.key, now=now_ms())
    join_device(second.home, invite, data, second.key, now=now_ms())
    approve(admin.t, [first.key.kid], projects=None, read=True, write=True, now=now_ms())
    views, _ = show_requests(admin.t, now_ms())
    by_kid = {v["kid"]: v for v in views}
    assert by_kid[second.key.kid]["refused"] == "invite-used"
    with pytest.raises(InputError, match="invite-used"):
        approve(admin.t, [second.key.kid], projects=None, read=True, write=True, now=now_ms())
    # signer not a device of the member: bob signs an invite naming alice as the member
    state = bob.t.trusted()
    roster = state.roster
    assert roster is not None
    forged = DeviceInvite(
        team=invite.team, member=alice.key.kid, name="phone", signer_public=bob.key.sign_public,
        root_public=invite.root_public, root_box_public=invite.root_box_public,
        location=invite.location, transport="folder", roster_version=roster.version,
        roster_hash=invite.roster_hash, created_at=now_ms(), expires_at=now_ms() + 3_600_000,
        invite_id=b64e(bytes(16)),
    )  # fmt: skip
    forged_line = DEVICE_INVITE_PREFIX + b64e(seal_device_invite(forged, bob.key))
    inv, data = read_device_invite_text(forged_line, now=now_ms())  # well formed and signed
    phone = world.node("phone")
    join_device(phone.home, inv, data, phone.key, now=now_ms())
    views, _ = show_requests(admin.t, now_ms())
    assert {v["kid"]: v for v in views}[phone.key.kid]["refused"] == "signer-mismatch"
    # wrong team: an invite of another team posted into this team's folder
    (tmp_path / "other").mkdir()
    other = make_world(tmp_path / "other", "carol")
    try:
        carol = other.nodes["carol"]
        other_line = invite_device(carol.t, "laptop", now_ms())
        oinv, odata = read_device_invite_text(other_line, now=now_ms())
        stray = world.node("stray")
        request = seal_device_join(
            team=oinv.team, key=stray.key, sign_public=stray.key.sign_public,
            box_public=stray.key.box_public, created_at=now_ms(), invite_data=odata, invite=oinv,
        )  # fmt: skip
        admin.t.transport.post_request(stray.key.kid, request)  # filed in this team's inbox
        views, _ = show_requests(admin.t, now_ms())
        assert {v["kid"]: v for v in views}[stray.key.kid]["refused"] == "cross-team"
    finally:
        other.close()


def test_no_sync_approves_a_device_request(world: World) -> None:
    admin, alice = world.nodes["admin"], world.nodes["alice"]
    line = invite_device(alice.t, "desktop", now_ms())
    invite, data = read_device_invite_text(line, now=now_ms())
    desktop = world.node("desktop")
    join_device(desktop.home, invite, data, desktop.key, now=now_ms())
    for node in (admin, alice, admin):
        node.sync()
    assert admin.t.roster().member(desktop.key.kid) is None
    views, _ = show_requests(admin.t, now_ms())
    assert [v["kid"] for v in views if v["kid"] == desktop.key.kid] == [desktop.key.kid]


def test_a_new_device_stops_before_publishing_when_the_chain_lacks_its_invites_roster(
    world: World,
) -> None:
    admin, alice = world.nodes["admin"], world.nodes["alice"]
    desktop = world.node("desktop")
    line = invite_device(alice.t, "desktop", now_ms())
    invite, _ = read_device_invite_text(line, now=now_ms())
    # the invite cites a roster hash the team's chain does not hold (another history)
    forked = replace(invite, roster_hash="0" * 64, invite_id=b64e(bytes(range(16))))
    data = seal_device_invite(forked, alice.key)
    join_device(desktop.home, forked, data, desktop.key, now=now_ms())
    approve(admin.t, [desktop.key.kid], projects=None, read=True, write=True, now=now_ms())
    desktop.team = _open(desktop)
    desktop.remember("desktop: must not leave before the chain is checked")
    with pytest.raises(InputError, match=r"enrolment is refused \(fork\)"):
        desktop.sync()
    assert desktop.key.kid not in (desktop.t.transport.newest_seqs(PROJECT) or {})


def test_purging_a_muted_member_drops_what_each_of_its_devices_wrote(world: World) -> None:
    import json
    import os
    import subprocess
    import sys

    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    alice.remember("alice laptop: the staging password is in the wiki")
    alice.sync()
    desktop.sync()
    desktop.remember("alice desktop: the staging password is in the wiki too")
    desktop.sync()
    bob.sync()
    assert len([t for t in contents(bob, PROJECT) if t.startswith("alice ")]) == 2
    cli = Path(sys.executable).with_name("sealmem")
    env = {**os.environ, "SEALMEM_HOME": str(bob.home)}
    for args in (["trust", "set", "alice", "muted"], ["trust", "purge", "alice", "--json"]):
        done = subprocess.run(
            [str(cli), *args], capture_output=True, text=True, env=env, check=False
        )
        assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["removed"] == 2
    assert [t for t in contents(bob, PROJECT) if t.startswith("alice ")] == []


def test_a_device_join_with_a_damaged_invite_is_refused_by_name(world: World) -> None:
    admin, alice = world.nodes["admin"], world.nodes["alice"]
    stray = world.node("stray")
    data = bad_invite_join(admin.t.config.team, alice.key.kid, stray.key)
    admin.t.transport.post_request(stray.key.kid, data)  # a hostile file in the inbox
    views, _ = show_requests(admin.t, now_ms())
    assert {v["kid"]: v for v in views}[stray.key.kid]["refused"] == "malformed"
    with pytest.raises(InputError, match="malformed"):
        approve(admin.t, [stray.key.kid], projects=None, read=True, write=True, now=now_ms())


def test_a_join_request_named_like_a_members_device_is_refused(world: World) -> None:
    from sealmem.client.team.admin import invite
    from sealmem.client.team.invite import read_invite
    from sealmem.client.team.join import join_team

    admin, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    desktop = world.node("desktop")
    add_device(alice, desktop, admin, _open)
    bob.sync()
    assert member_names(bob.store.connection)[desktop.key.kid] == "alice (desktop)"
    # a newcomer named as alice's desktop shows in provenance exactly as that device
    inv = read_invite(invite(admin.t, now_ms()), now=now_ms())
    mallory = world.node("mallory")
    join_team(mallory.home, inv, mallory.key, name="alice (desktop)", now=now_ms())
    with pytest.raises(InputError, match="looks like"):
        approve(admin.t, [mallory.key.kid], projects=None, read=True, write=True, now=now_ms())
    assert admin.t.roster().member(mallory.key.kid) is None
