"""Files planted in the shared folder that are not what their names say.

The folder is untrusted: anyone with write access can drop a huge file, a FIFO,
a directory or a dangling link under a name the transport reads.  None of them
may exhaust memory, hang the sync, or stop it; the rest of the team still syncs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sealmem.client.sync.folder import FolderTransport
from sealmem.protocol import reasons
from sealmem.protocol.verify import MAX_MANIFEST_BYTES
from tests.sync.conftest import PROJECT, Node, World, every_file, make_world

WRITER = "b" * 26


def _writer_dir(world: World, node: Node) -> Path:
    team = world.nodes["admin"].t.config.team
    return world.folder / "sealmem" / team / "snapshots" / PROJECT / node.key.kid


def test_a_huge_manifest_is_read_only_up_to_its_limit(tmp_path: Path) -> None:
    folder = FolderTransport(tmp_path, "team1", ours=every_file)
    folder.prepare_new_team()
    folder.push("proj", WRITER, 1, b"m1", {})
    huge = folder.base / "snapshots" / "proj" / WRITER / "manifest-000000000002.json"
    with open(huge, "wb") as fh:
        fh.truncate(64 * 1024 * 1024)  # sparse: costs no disk, would cost 64 MiB of memory
    data = folder.newest_manifest("proj", WRITER)
    assert data is not None
    assert len(data) == MAX_MANIFEST_BYTES + 1
    assert [len(d) for d in folder.writer_manifests("proj", WRITER)] == [MAX_MANIFEST_BYTES + 1, 2]


def test_non_files_under_read_names_are_missing_not_errors(tmp_path: Path) -> None:
    folder = FolderTransport(tmp_path, "team1", ours=every_file)
    folder.prepare_new_team()
    folder.push("proj", WRITER, 1, b"m1", {})
    writer_dir = folder.base / "snapshots" / "proj" / WRITER
    (writer_dir / "manifest-000000000002.json").mkdir()
    os.mkfifo(writer_dir / "manifest-000000000003.json")  # opening it blocking would hang
    (writer_dir / "manifest-000000000004.json").symlink_to("/dev/zero")  # endless
    (writer_dir / "manifest-000000000005.json").symlink_to(tmp_path / "nowhere")
    assert folder.newest_manifest("proj", WRITER) is None
    assert folder.writer_manifests("proj", WRITER) == []  # the newest three are not files
    chunk_id = "a" * 64
    os.mkfifo(writer_dir / "chunks" / chunk_id)
    assert folder.chunk("proj", WRITER, chunk_id) is None


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_sync_goes_on_past_planted_oversize_fifo_and_dangling_files(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", "bob", "carol")
    try:
        alice, bob, carol = (world.nodes[n] for n in ("alice", "bob", "carol"))
        alice.remember("the deploy runs from the release branch only")
        carol.remember("staging uses the eu-west database replica")
        alice.sync()
        carol.sync()
        # An attacker plants objects under alice's names and into bob's own chunk folder.
        alice_dir = _writer_dir(world, alice)
        newest = sorted(alice_dir.glob("manifest-*.json"))[-1]
        seq = int(newest.name[len("manifest-") : -len(".json")])
        with open(alice_dir / f"manifest-{seq + 1:012d}.json", "wb") as fh:
            fh.truncate(64 * 1024 * 1024)
        os.mkfifo(alice_dir / "chunks" / ("f" * 64))
        bob.remember("bob's own note so that bob pushes and collects")
        bob.sync()
        bob_chunks = _writer_dir(world, bob) / "chunks"
        (bob_chunks / ("d" * 64)).symlink_to(tmp_path / "gone")
        (bob_chunks / ("e" * 64)).mkdir()
        bob.remember("a second note of bob's, so the next sync pushes and collects again")
        summary = bob.sync()
        assert [r.reason for r in summary.refused] == [reasons.TOO_LARGE]
        contents = {m.record.content for m in bob.memories().values()}
        assert "staging uses the eu-west database replica" in contents
        assert "the deploy runs from the release branch only" in contents
        assert summary.pushed_versions == 1
    finally:
        world.close()
