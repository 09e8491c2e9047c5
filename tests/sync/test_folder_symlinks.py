"""Symbolic links planted inside the team folder are never followed.

Anyone with write access to the share can swap ``snapshots/{project}/{kid}``,
``keyrings/{project}`` or ``requests`` for a link to a directory on a member's
own disk.  Following it, a push would write there and chunk collection would
delete from there.  Reads skip what lies behind a link (with a warning naming
it), writes and deletes refuse it; nothing outside the folder changes.  The
folder the user configured may itself be a link.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sealmem.client.sync.folder import FolderTransport
from sealmem.client.sync.nofollow import Symlinked
from sealmem.protocol.errors import TransportError
from tests.support.cli import in_process
from tests.sync.conftest import PROJECT, every_file, make_world

WRITER = "b" * 26
OLD_CHUNK = "c" * 64


def _outside(tmp_path: Path) -> Path:
    """A local directory outside the share, with a chunk-named file old enough to collect."""
    target = tmp_path / "precious"
    (target / "chunks").mkdir(parents=True)
    (target / "chunks" / OLD_CHUNK).write_bytes(b"my own file")
    (target / "manifest-000000000001.json").write_bytes(b"not for the team")
    os.utime(target / "chunks" / OLD_CHUNK, (0, 0))
    return target


def _contents(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(directory.rglob("*"))
    }


@pytest.fixture
def folder(tmp_path: Path) -> FolderTransport:
    share = tmp_path / "share"
    share.mkdir()
    transport = FolderTransport(share, "team1", ours=every_file)
    transport.prepare_new_team()
    return transport


def test_a_planted_writer_link_is_skipped_on_read_and_refused_on_write(
    folder: FolderTransport, tmp_path: Path
) -> None:
    target = _outside(tmp_path)
    before = _contents(target)
    (folder.base / "snapshots" / "proj").mkdir(parents=True)
    link = folder.base / "snapshots" / "proj" / WRITER
    link.symlink_to(target)

    assert folder.manifests("proj") == {}
    assert folder.newest_seqs("proj") == {}
    assert folder.writer_manifests("proj", WRITER) == []
    assert folder.newest_manifest("proj", WRITER) is None
    assert folder.chunk("proj", WRITER, OLD_CHUNK) is None
    notes = folder.take_warnings()
    assert notes
    assert all(str(link) in n for n in notes)
    assert folder.take_warnings() == []

    with pytest.raises(Symlinked, match="symbolic link") as refused:
        folder.push("proj", WRITER, 2, b"manifest", {"d" * 64: b"chunk"})
    assert str(link) in str(refused.value)
    with pytest.raises(Symlinked):
        folder.collect("proj", WRITER, keep=set(), grace_ms=0)
    assert _contents(target) == before


def test_a_link_deeper_in_the_writer_folder_is_refused_too(
    folder: FolderTransport, tmp_path: Path
) -> None:
    target = _outside(tmp_path)
    folder.push("proj", WRITER, 1, b"m1", {})
    chunks = folder.base / "snapshots" / "proj" / WRITER / "chunks"
    chunks.rmdir()
    chunks.symlink_to(target / "chunks")
    before = _contents(target)
    with pytest.raises(Symlinked):
        folder.collect("proj", WRITER, keep=set(), grace_ms=0)
    with pytest.raises(Symlinked):
        folder.push("proj", WRITER, 2, b"m2", {"d" * 64: b"chunk"})
    assert folder.chunk("proj", WRITER, OLD_CHUNK) is None
    assert _contents(target) == before


def test_planted_keyring_and_request_links(folder: FolderTransport, tmp_path: Path) -> None:
    target = _outside(tmp_path)
    (target / "0000000001.json").write_bytes(b"keyring-shaped")
    (target / ("a" * 26 + ".json")).write_bytes(b"request-shaped")
    before = _contents(target)
    (folder.base / "keyrings").mkdir()
    (folder.base / "keyrings" / "proj").symlink_to(target)
    (folder.base / "requests").symlink_to(target)

    assert folder.keyrings("proj") == []
    assert folder.requests() == {}
    notes = folder.take_warnings()
    assert any("keyrings/proj" in n for n in notes)
    assert any(n.endswith("and sync again") and "requests" in n for n in notes)

    with pytest.raises(Symlinked):
        folder.put_keyring("proj", 2, b"keyring")
    with pytest.raises(Symlinked):
        folder.post_request("z" * 26, b"request")
    with pytest.raises(Symlinked):
        folder.remove_request("a" * 26)
    assert _contents(target) == before


def test_a_linked_team_folder_is_refused(tmp_path: Path) -> None:
    share, elsewhere = tmp_path / "share", tmp_path / "elsewhere"
    (share / "sealmem").mkdir(parents=True)
    elsewhere.mkdir()
    (share / "sealmem" / "team1").symlink_to(elsewhere)
    folder = FolderTransport(share, "team1", ours=every_file)
    with pytest.raises(Symlinked):
        folder.rosters(0)
    with pytest.raises(Symlinked):
        folder.put_roster(1, b"roster")
    assert list(elsewhere.iterdir()) == []


def test_the_configured_folder_itself_may_be_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real-share"
    real.mkdir()
    (tmp_path / "mounted").symlink_to(real)
    folder = FolderTransport(tmp_path / "mounted", "team1", ours=every_file)
    folder.prepare_new_team()
    folder.push("proj", WRITER, 1, b"m1", {"d" * 64: b"chunk"})
    folder.put_roster(1, b"r1")
    assert folder.newest_manifest("proj", WRITER) == b"m1"
    assert folder.chunk("proj", WRITER, "d" * 64) == b"chunk"
    assert folder.rosters(0) == [b"r1"]
    assert (real / "sealmem" / "team1" / "snapshots" / "proj" / WRITER / "chunks").is_dir()
    assert folder.take_warnings() == []


@pytest.mark.slow
def test_a_team_syncs_past_a_planted_link_and_writes_nothing_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world = make_world(tmp_path, "alice", "bob")
    try:
        boss, alice, bob = (world.nodes[n] for n in ("admin", "alice", "bob"))
        alice.remember("the deploy runs from the release branch only")
        alice.sync()
        bob.remember("bob's note, pushed before the link is planted")
        bob.sync()
        team_dir = world.folder / "sealmem" / boss.t.config.team
        target = _outside(tmp_path)
        before = _contents(target)
        # bob's slot is swapped for a link to a local directory, requests/ too
        bob_dir = team_dir / "snapshots" / PROJECT / bob.key.kid
        bob_dir.rename(tmp_path / "bob-moved-away")
        bob_dir.symlink_to(target)
        (team_dir / "requests").rmdir()
        (team_dir / "requests").symlink_to(target)

        alice.remember("a second note of alice's")
        summary = alice.sync()
        assert summary.refused == []
        assert any(str(bob_dir) in w for w in summary.warnings)
        assert alice.store.recent(limit=10, project=PROJECT)

        bob.remember("bob writes again: its push must not follow the link")
        with pytest.raises(TransportError, match="symbolic link"):
            bob.sync()

        monkeypatch.setenv("SEALMEM_HOME", str(boss.home))
        run = in_process(capsys, monkeypatch)
        done = run("admin", "requests")
        assert done.code == 0, done
        assert "no join requests are waiting" in done.out
        assert "requests is a symbolic link" in done.err
        assert _contents(target) == before
    finally:
        world.close()
