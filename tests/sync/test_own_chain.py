"""Our own chain read back over a real folder (SPEC "Restore and copied keys"): a home
copied to a second machine is stopped as key-in-use and loses nothing, a restore (the
whole home, or store.db alone) gets its later memories back once, an interrupted push is
not taken for a copy, a head teammates witness but the folder withholds publishes nothing."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from sealmem.client.sync.own_chain import KeyInUse, is_adopted
from sealmem.client.sync.session import Team
from sealmem.protocol import reasons
from tests.support.cli import in_process

from .conftest import PROJECT, World, make_world
from .machines import backup, close, contents, restore_home, restore_store
from .own_chain_runs import READ_BACK, alternate, restore_again, restore_run

pytestmark = pytest.mark.slow


def folder_team(node: Any) -> Team:
    return Team.open(node.home, node.store, node.key)


def chain_files(world: World, kid: str) -> dict[str, str]:
    """Every file of ``kid``'s chains in the folder, by path, with a digest of its bytes."""
    return {
        str(p.relative_to(world.folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(world.folder.rglob(f"snapshots/*/{kid}/**/*"))
        if p.is_file()
    }


def test_a_copied_home_is_stopped_as_key_in_use_and_nothing_is_lost(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", "bob")
    laptop, bob = world.nodes["alice"], world.nodes["bob"]
    try:
        desktop = alternate(
            laptop, bob, tmp_path, folder_team, lambda: chain_files(world, laptop.key.kid)
        )
        close(desktop)
        carol = world.add_members("carol")[0]
        world.sync_all(1)
        assert contents(carol, PROJECT) == contents(bob, PROJECT)
    finally:
        world.close()


@pytest.mark.parametrize("whole_home", [False, True], ids=["store-alone", "whole-home"])
def test_a_restore_gets_every_later_memory_back_and_a_late_joiner_too(
    tmp_path: Path, whole_home: bool
) -> None:
    world = make_world(tmp_path, "alice", "bob")
    try:
        texts, _ = restore_run(world.nodes["alice"], tmp_path, folder_team, whole_home=whole_home)
        carol = world.add_members("carol")[0]
        carol.sync()
        carol.sync()
        assert set(texts) <= contents(carol, PROJECT)
        world.nodes["bob"].sync()
        assert set(texts) <= contents(world.nodes["bob"], PROJECT)
    finally:
        world.close()


def test_a_second_restore_is_key_in_use_until_sync_adopt_confirms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(tmp_path, "alice", "bob")
    alice = world.nodes["alice"]
    try:
        texts, saved = restore_run(alice, tmp_path, folder_team, whole_home=False)
        restore_again(alice, saved, folder_team)
        assert set(texts) <= contents(alice, PROJECT)
        restore_store(alice, saved, folder_team)  # and a third time, through the CLI
        monkeypatch.setenv("SEALMEM_HOME", str(alice.home))
        run = in_process(capsys, monkeypatch)
        stopped = run("sync")
        assert stopped.code == 1
        lines = [line for line in stopped.err.splitlines() if "key-in-use" in line]
        assert len(lines) == 1, stopped.err
        assert "sealmem sync --adopt" in lines[0]
        assert "Traceback" not in stopped.err
        assert run("sync", "--watch", "--adopt").code == 1  # a confirmation is for one sync
        confirmed = run("sync", "--adopt")
        assert confirmed.code == 0, confirmed.err
        assert READ_BACK in confirmed.err
        assert set(texts) <= contents(alice, PROJECT)
    finally:
        world.close()


class Killed(BaseException):
    """The process died right after the manifest reached the folder."""


def test_an_interrupted_push_is_not_taken_for_a_copy(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    transport = alice.t.transport
    real = transport.push

    def push_then_die(*args: Any) -> None:
        real(*args)
        raise Killed

    for n in range(2):  # twice: a second adopt would read as key-in-use
        alice.remember(f"alice note {n}, pushed by a sync that died")
        transport.push = push_then_die  # type: ignore[method-assign]
        with pytest.raises(Killed):
            alice.sync()
        del transport.push
    alice.remember("alice note after the interrupted pushes")
    summary = alice.sync()
    assert not [w for w in summary.warnings if READ_BACK in w]
    assert not is_adopted(alice.home)
    assert bob.sync().refused == []
    assert {
        "alice note 0, pushed by a sync that died",
        "alice note 1, pushed by a sync that died",
        "alice note after the interrupted pushes",
    } <= contents(bob, PROJECT)


def test_a_head_the_folder_withholds_publishes_nothing_for_that_project(
    world: World, tmp_path: Path
) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    alice.remember("alice's first note")
    alice.sync()
    saved = backup(alice, tmp_path / "alice-backup")
    alice.remember("alice's second note")
    alice.sync()
    bob.remember("bob's note, witnessing alice's newest manifest")
    bob.sync()
    newest = sorted(world.folder.rglob(f"snapshots/{PROJECT}/{alice.key.kid}/manifest-*"))[-1]
    newest.unlink()  # withheld, and alice's store is back at the manifest before it
    restore_home(alice, saved, folder_team)
    alice.remember("alice's note after the restore")
    before = chain_files(world, alice.key.kid)
    summary = alice.sync()
    said = [w for w in summary.warnings if w.startswith("behind-witness:")]
    assert len(said) == 1
    assert repr(PROJECT) in said[0]
    assert chain_files(world, alice.key.kid) == before
    # bob sees the folder serve alice's older manifest, and no fork of her chain
    assert {r.reason for r in bob.sync().refused} <= {reasons.ROLLBACK}


def test_the_key_in_use_message_names_every_stopped_project() -> None:
    text = str(KeyInUse(["webapp", "shared"]))
    assert text.startswith("key-in-use: ")
    assert "'webapp', 'shared'" in text
    assert "sealmem sync --adopt" in text


def test_a_head_whose_chunks_the_folder_lost_is_adopted_for_what_is_left(
    world: World, tmp_path: Path
) -> None:
    alice = world.nodes["alice"]
    alice.remember("alice's note in the backup")
    alice.sync()
    saved = backup(alice, tmp_path / "alice-backup")
    alice.remember("alice's note after the backup, whose chunk the folder loses")
    alice.sync()
    restore_store(alice, saved, folder_team)
    for chunk in world.folder.rglob(f"snapshots/{PROJECT}/{alice.key.kid}/chunks/*"):
        chunk.unlink()  # lost to every reader already
    said = [w for w in alice.sync().warnings if READ_BACK in w]
    assert len(said) == 1
    assert "chunks of it the transport lost" in said[0]
    assert contents(alice, PROJECT) == {"alice's note in the backup"}
    assert is_adopted(alice.home)  # and the chain goes on: the next sync publishes as usual
    alice.remember("alice's note after the restore")
    assert alice.sync().pushed_versions >= 1
