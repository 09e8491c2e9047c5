"""FolderTransport on real directories: layout, atomicity, untrusted names."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sealmem.client.sync.folder import MANIFESTS_KEPT, FolderTransport
from sealmem.client.sync.transport import ConflictError
from sealmem.crypto import SUITE
from sealmem.protocol.errors import InputError, TransportError
from sealmem.protocol.snapshot import chunk_id
from tests.sync.conftest import PROJECT, every_file, make_world

WRITER = "a" * 26
CHUNK = "0" * 64


@pytest.fixture
def folder(tmp_path: Path) -> FolderTransport:
    transport = FolderTransport(tmp_path, "team1", ours=every_file)
    transport.prepare_new_team()  # what 'team create' does first
    transport.put_roster(1, b"one")
    return transport


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TransportError, match="does not exist"):
        FolderTransport(tmp_path / "nope", "team1", ours=every_file)


def test_roster_chain_in_order_and_never_overwritten(folder: FolderTransport) -> None:
    folder.put_roster(3, b"three")
    folder.put_roster(2, b"two")
    assert folder.rosters(0) == [b"one", b"two", b"three"]
    assert folder.rosters(1) == [b"two", b"three"]
    with pytest.raises(TransportError, match="already exists"):
        folder.put_roster(2, b"other")
    assert folder.rosters(2) == [b"three"]


def test_push_writes_chunks_then_manifest_and_keeps_a_few(folder: FolderTransport) -> None:
    for seq in range(1, MANIFESTS_KEPT + 3):
        folder.push("proj", WRITER, seq, f"m{seq}".encode(), {CHUNK: b"c"})
    newest = folder.manifests("proj")[WRITER]
    assert newest[0] == f"m{MANIFESTS_KEPT + 2}".encode()
    assert len(newest) == MANIFESTS_KEPT
    assert folder.chunk("proj", WRITER, CHUNK) == b"c"
    assert folder.chunk("proj", WRITER, "1" * 64) is None


def test_planted_names_are_ignored(folder: FolderTransport) -> None:
    folder.push("proj", WRITER, 1, b"m1", {})
    project_dir = folder.base / "snapshots" / "proj"
    (project_dir / "..evil").mkdir()
    (project_dir / "NotAKid").mkdir()
    (project_dir / WRITER / "manifest-x.json").write_bytes(b"junk")
    assert list(folder.manifests("proj")) == [WRITER]
    assert folder.chunk("proj", WRITER, "../../../etc/passwd") is None
    with pytest.raises(InputError):
        folder.keyrings("../x")


def test_names_match_their_pattern_exactly(folder: FolderTransport) -> None:
    """``\\d`` also matches other scripts' digits, which ``int`` reads, and ``$`` matches
    before a final newline: a planted ``roster/٠٠٠٠٠٠٠٠٠٢.json`` or
    ``roster/0000000003.json\\n`` was read as a roster (SPEC "Reading": only names of
    the patterns, decimal and zero-padded), a ``proj\\n`` directory as a project."""
    arabic = "".maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
    folder.push("proj", WRITER, 1, b"m1", {})
    folder.put_keyring("proj", 1, b"k1")
    folder.put_checkpoint(1, b"c1")
    base = folder.base
    (base / "roster" / "0000000002.json".translate(arabic)).write_bytes(b"planted")
    (base / "keyrings" / "proj" / "0000000002.json".translate(arabic)).write_bytes(b"planted")
    manifest = "manifest-" + "000000000002".translate(arabic) + ".json"
    (base / "snapshots" / "proj" / WRITER / manifest).write_bytes(b"planted")
    (base / "checkpoint" / "0000000002.json".translate(arabic)).write_bytes(b"planted")
    (base / "roster" / "0000000003.json\n").write_bytes(b"planted")
    (base / "keyrings" / "proj" / "0000000003.json\n").write_bytes(b"planted")
    (base / "snapshots" / "proj" / WRITER / "manifest-000000000003.json\n").write_bytes(b"x")
    folder.post_request(WRITER, b"join")
    (base / "requests" / f"{'b' * 26}.json\n").write_bytes(b"planted")
    chains = base / "private" / WRITER / WRITER
    for project in ("proj", "proj\n"):
        (chains / project).mkdir(parents=True)
    assert folder.private_space(WRITER).chain_projects(WRITER) == ["proj"]
    assert folder.requests() == {WRITER: b"join"}
    assert folder.rosters(0) == [b"one"]
    assert folder.keyrings("proj") == [b"k1"]
    assert folder.writer_manifests("proj", WRITER) == [b"m1"]
    assert folder.newest_seqs("proj") == {WRITER: 1}
    assert folder.checkpoint() == b"c1"


def test_collect_removes_only_old_unreferenced_chunks(folder: FolderTransport) -> None:
    keep, old, fresh = "1" * 64, "2" * 64, "3" * 64
    folder.push("proj", WRITER, 1, b"m", {keep: b"k", old: b"o", fresh: b"f"})
    chunk_dir = folder.base / "snapshots" / "proj" / WRITER / "chunks"
    past = os.stat(chunk_dir / old).st_mtime - 3600
    os.utime(chunk_dir / old, (past, past))
    os.utime(chunk_dir / keep, (past, past))
    assert folder.collect("proj", WRITER, {keep}, grace_ms=60_000) == 1
    assert sorted(os.listdir(chunk_dir)) == sorted([keep, fresh])


def test_requests_round_trip(folder: FolderTransport) -> None:
    folder.post_request(WRITER, b"join")
    assert folder.requests() == {WRITER: b"join"}
    folder.remove_request(WRITER)
    assert folder.requests() == {}
    with pytest.raises(InputError):
        folder.post_request("../../x", b"join")


def test_no_temp_files_left_behind(folder: FolderTransport) -> None:
    folder.put_keyring("proj", 1, b"k1")
    folder.push("proj", WRITER, 1, b"m1", {CHUNK: b"c"})
    leftovers = [p for p in folder.base.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []
    assert folder.keyrings("proj") == [b"k1"]


def test_atomic_write_sets_the_exact_mode_whatever_the_umask(tmp_path: Path) -> None:
    from sealmem.client.fsutil import atomic_write

    old = os.umask(0o077)
    try:
        atomic_write(tmp_path / "shared.json", b"{}", mode=0o644)
        atomic_write(tmp_path / "private.json", b"{}", mode=0o600)
    finally:
        os.umask(old)
    assert (tmp_path / "shared.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "private.json").stat().st_mode & 0o777 == 0o600
    assert atomic_write(tmp_path / "shared.json", b"x", exclusive=True) is False
    assert (tmp_path / "shared.json").read_bytes() == b"{}"


def test_an_unmounted_share_is_an_error_not_an_empty_team(tmp_path: Path) -> None:
    mount = tmp_path / "mnt"
    mount.mkdir()
    created = FolderTransport(mount, "team1", ours=every_file)
    created.prepare_new_team()
    created.put_roster(1, b"one")
    (mount / "sealmem").rename(tmp_path / "elsewhere")  # the share is gone; the mount point stays
    folder = FolderTransport(mount, "team1", ours=every_file)
    with pytest.raises(TransportError, match="mounted"):
        folder.rosters(0)
    with pytest.raises(TransportError, match="mounted"):
        folder.push("proj", WRITER, 2, b"m2", {CHUNK: b"c"})
    with pytest.raises(TransportError, match="mounted"):
        folder.post_request(WRITER, b"join")
    assert list(mount.iterdir()) == []  # nothing written to the local disk


def test_push_is_compare_and_swap_on_the_writers_valid_looking_seq(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice")
    try:
        alice = world.nodes["alice"]
        for text in ("first", "second"):
            alice.remember(text)
            alice.sync()
        mine = alice.t.transport
        keyless = FolderTransport(
            world.folder, alice.t.config.team, ours=every_file
        )  # checks shapes only
        kid = alice.key.kid
        second, first = mine.writer_manifests(PROJECT, kid)
        slot = next(world.folder.rglob(f"{kid}/manifest-000000000002.json")).parent
        for folder in (mine, keyless):
            folder.push(PROJECT, kid, 2, second, {})  # the newest, again: a no-op
            with pytest.raises(ConflictError, match="already holds seq 2") as info:
                folder.push(PROJECT, kid, 2, first, {})  # same seq, other bytes: a fork
            assert info.value.detail == f"{kid}/{PROJECT} already holds seq 2"
            with pytest.raises(ConflictError):
                folder.push(PROJECT, kid, 1, first, {})  # below the newest
        assert (slot / "manifest-000000000002.json").read_bytes() == second
        # planted files above the newest cannot block the writer, and are cleared away
        (slot / "manifest-000000000090.json").write_bytes(b"\x00garbage")
        (slot / "manifest-000000000091.json").write_bytes(first)  # a copy at the wrong seq
        alice.remember("third")
        summary = alice.sync()
        assert summary.warnings == []
        assert sorted(p.name for p in slot.glob("manifest-*")) == [
            f"manifest-{n:012d}.json" for n in (1, 2, 3)
        ]
    finally:
        world.close()


def test_an_existing_roster_version_is_a_conflict(folder: FolderTransport) -> None:
    with pytest.raises(ConflictError, match="already exists"):
        folder.put_roster(1, b"another one")


def test_a_push_syncs_each_chunk_and_the_chunk_directory_once_before_the_manifest(
    folder: FolderTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every chunk file is fsynced before its rename, the chunk directory once after the
    last rename and before the manifest is written (it was once per chunk: two fsyncs a
    chunk, ~2,600 in a first sync of 5 x 10k), then the manifest and its directory."""
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    blobs = [f"chunk {i}".encode() for i in range(6)]
    chunks = {chunk_id(SUITE, data): data for data in blobs}
    folder.push("proj", WRITER, 1, b"m1", chunks)
    # the snapshots, project, writer and chunk directories made: each parent synced once
    assert synced == ["dir"] * 4 + ["file"] * 6 + ["dir", "file", "dir"]
    assert all(folder.chunk("proj", WRITER, c) == data for c, data in chunks.items())
    synced.clear()
    folder.push("proj", WRITER, 2, b"m2", chunks)  # every chunk there: none written again
    assert synced == ["dir", "file", "dir"]


def test_a_push_stopped_before_its_directory_sync_syncs_it_on_the_retry(
    folder: FolderTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A push stopped after renaming its chunks and before the chunk directory's fsync
    (the process killed there) leaves entries that may not survive a power cut.  The
    retry finds every chunk there and writes none: it must still fsync the chunk
    directory before the manifest that names them, or the manifest can last without
    its chunks (the team then refuses the snapshot: missing-chunk)."""
    from sealmem.client.sync.nofollow import SafeDir

    blobs = [f"chunk {i}".encode() for i in range(3)]
    chunks = {chunk_id(SUITE, data): data for data in blobs}

    real_sync = SafeDir.sync

    def stopped(self: SafeDir) -> None:
        if self.path.name == "chunks":
            raise KeyboardInterrupt  # the process stopped before the directory's fsync
        real_sync(self)

    with monkeypatch.context() as patch:
        patch.setattr(SafeDir, "sync", stopped)
        with pytest.raises(KeyboardInterrupt):
            folder.push("proj", WRITER, 1, b"m1", chunks)
    chunk_dir = folder._root / "sealmem" / "team1" / "snapshots" / "proj" / WRITER / "chunks"
    assert sorted(os.listdir(chunk_dir)) == sorted(chunks)  # renamed, not yet synced
    synced: list[tuple[int, int]] = []
    real = os.fsync

    def spy(fd: int) -> None:
        found = os.fstat(fd)
        synced.append((found.st_dev, found.st_ino))
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    folder.push("proj", WRITER, 1, b"m1", chunks)
    manifest = (chunk_dir.parent / f"manifest-{1:012d}.json").stat()
    where = chunk_dir.stat()
    assert (where.st_dev, where.st_ino) in synced
    assert synced.index((where.st_dev, where.st_ino)) < synced.index(
        (manifest.st_dev, manifest.st_ino)
    )
