"""Admin commands that act on a member act on each of its devices (issue 27 review):
``admin reset-writer`` resets every device's chains, and the count ``admin revoke
--drop-data`` shows covers what each device wrote.  A new device's damaged saved invite
(``<home>/device-invite``) is one line naming the file and the fix, not a traceback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sealmem.client.sync.session import Team
from sealmem.client.team import admin
from sealmem.protocol.errors import InputError
from tests.support.cli import Run, in_process

from .conftest import PROJECT, World, make_world
from .device_runs import add_device

pytestmark = pytest.mark.slow


def _open(node: object) -> Team:
    return Team.open(node.home, node.store, node.key)  # type: ignore[attr-defined]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, "alice", "bob")
    w.sync_all(1)
    add_device(w.nodes["alice"], w.node("desktop"), w.nodes["admin"], _open)
    yield w
    w.close()


def test_reset_writer_resets_the_chains_of_every_device(world: World) -> None:
    adm, alice, desktop = world.nodes["admin"], world.nodes["alice"], world.nodes["desktop"]
    before = len(adm.t.roster().resets)
    roster = admin.reset_writer(adm.t, "alice", now=adm.clock())
    added = {r.kid for r in roster.resets[before:] if r.project == PROJECT}
    assert added == {alice.key.kid, desktop.key.kid}


def test_the_drop_count_covers_every_device(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    adm, alice, desktop = world.nodes["admin"], world.nodes["alice"], world.nodes["desktop"]
    alice.remember("written on alice's laptop: the VPN needs the new profile")
    desktop.remember("written on alice's desktop: the printer is on the second floor")
    for node in (alice, desktop, adm):
        node.sync()
    monkeypatch.setenv("SEALMEM_HOME", str(adm.home))
    run: Callable[..., Run] = in_process(capsys, monkeypatch)
    refused = run("admin", "revoke", "alice", "--drop-data")  # no terminal: it only counts
    assert refused.code == 1
    assert "changes 2 memories in your store: 0 go back" in refused.err, refused.err
    assert "2 that only alice wrote move to history" in refused.err


@pytest.mark.parametrize(
    "damage",
    [
        b"\xff\xfe not ascii\n",
        b"not base64!\n",
        b"c2VhbG1lbQ\n",
        b"sealmem-device-invite:AAAA\n",
        None,
    ],
    ids=["not-ascii", "not-base64", "not-an-invite", "a-line-of-nothing", "a-directory"],
)
def test_a_damaged_saved_device_invite_is_named_with_its_fix(
    world: World,
    damage: bytes | None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    desktop = world.nodes["desktop"]
    saved = desktop.home / "device-invite"
    line = "sealmem-device-invite:" + saved.read_text("ascii").strip()
    saved.unlink()
    if damage is None:
        saved.mkdir()
    else:
        saved.write_bytes(damage)
    monkeypatch.setenv("SEALMEM_HOME", str(desktop.home))
    run: Callable[..., Run] = in_process(capsys, monkeypatch)
    done = run("sync")
    assert done.code == 1, done.out
    assert f"the saved device invite {saved} is damaged" in done.err, done.err
    assert "sealmem device add" in done.err
    assert "Traceback" not in done.err
    # the fix the message gives: paste the printed line into the file, sync again
    if damage is None:
        saved.rmdir()
    saved.write_text(line + "\n", "ascii")
    assert run("sync").code == 0
    assert not saved.exists()  # checked, then removed


def test_reset_writer_of_a_member_whose_every_device_is_revoked_names_it(world: World) -> None:
    from sealmem.client.team import devices

    adm, alice, desktop = world.nodes["admin"], world.nodes["alice"], world.nodes["desktop"]
    for device in (desktop, alice):
        devices.revoke_device(adm.t, device.key.kid, member="alice", now=adm.clock())
    version = adm.t.roster().version
    with pytest.raises(InputError, match="every device of alice is revoked; nothing to reset"):
        admin.reset_writer(adm.t, "alice", now=adm.clock())
    assert adm.t.roster().version == version  # nothing was published
