"""Entries of the shared folder that cannot be opened or read stop nobody's sync.

Anyone with write access to the share can plant a unix socket (opening it fails
with ENXIO) or a file nobody may read (EACCES) under a manifest's or a chunk's
name.  Each is "not a usable file": skipped with a warning naming it, and the
rest of the sync goes on, for readers and for the writer whose folder it is (whose
push also removes a planted manifest above its own seq).
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sealmem.client.sync.folder import FolderTransport
from sealmem.protocol import reasons
from sealmem.protocol.errors import TransportError
from tests.support.nobody import as_nobody
from tests.sync.conftest import PROJECT, Node, World, every_file

WRITER = "b" * 26


def _writer_dir(world: World, node: Node) -> Path:
    team = world.nodes["admin"].t.config.team
    return world.folder / "sealmem" / team / "snapshots" / PROJECT / node.key.kid


def _plant_socket(directory: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> socket.socket:
    """A listening unix socket at ``directory/name`` (bound relative: paths may be long)."""
    sock = socket.socket(socket.AF_UNIX)
    with monkeypatch.context() as m:
        m.chdir(directory)
        sock.bind(name)
    return sock


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for sock in opened:
        sock.close()


def test_a_socket_as_a_teammates_manifest_and_chunk_does_not_stop_the_sync(
    world: World, monkeypatch: pytest.MonkeyPatch, sockets: list[socket.socket]
) -> None:
    alice, bob, carol = (world.nodes[n] for n in ("alice", "bob", "carol"))
    carol.remember("carol writes the release notes")
    carol.sync()
    bob.remember("bob owns the staging database")
    bob.sync()
    carol_dir = _writer_dir(world, carol)
    sockets.append(_plant_socket(carol_dir, "manifest-999999999999.json", monkeypatch))
    bob_chunks = sorted((_writer_dir(world, bob) / "chunks").iterdir())
    for chunk in bob_chunks:
        chunk.unlink()
    sockets.append(_plant_socket(bob_chunks[0].parent, bob_chunks[0].name, monkeypatch))

    summary = alice.sync()

    contents = {m.content for m in alice.memories().values()}
    assert "carol writes the release notes" in contents  # carol's older manifest was read
    assert "bob owns the staging database" not in contents
    assert [r.reason for r in summary.refused] == [reasons.MISSING_CHUNK]
    planted = [carol_dir / "manifest-999999999999.json", bob_chunks[0]]
    for path in planted:
        assert any(str(path) in w for w in summary.warnings), (path, summary.warnings)


@pytest.mark.slow
def test_the_writer_pushes_past_a_planted_socket_and_removes_it(
    world: World, monkeypatch: pytest.MonkeyPatch, sockets: list[socket.socket]
) -> None:
    alice, carol = world.nodes["alice"], world.nodes["carol"]
    carol.remember("carol writes the release notes")
    carol.sync()
    carol_dir = _writer_dir(world, carol)
    planted = carol_dir / "manifest-999999999999.json"
    sockets.append(_plant_socket(carol_dir, planted.name, monkeypatch))
    carol.remember("the release is on thursday")

    summary = carol.sync()

    assert summary.pushed_versions == 1
    assert not planted.exists()
    assert not planted.is_symlink()
    alice.sync()
    assert "the release is on thursday" in {m.content for m in alice.memories().values()}


@pytest.fixture
def open_root() -> Iterator[Path]:
    """A folder outside pytest's private tmp dir, which user ``nobody`` can reach."""
    root = Path(tempfile.mkdtemp(prefix="sealmem-unreadable-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root)


def test_an_unreadable_manifest_or_chunk_is_no_file_with_a_warning(open_root: Path) -> None:
    root = open_root
    folder = FolderTransport(root, "team1", ours=every_file)
    folder.prepare_new_team()
    chunk_id = "a" * 64
    folder.push("proj", WRITER, 1, b"m1", {chunk_id: b"chunk"})
    writer_dir = folder.base / "snapshots" / "proj" / WRITER
    for path in folder.base.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    locked = [writer_dir / "manifest-000000000002.json", writer_dir / "chunks" / chunk_id]
    locked[0].write_bytes(b"m2")
    for path in locked:
        path.chmod(0)

    def read() -> tuple[bytes | None, list[bytes], bytes | None, list[str]]:
        reader = FolderTransport(root, "team1", ours=every_file)
        return (
            reader.newest_manifest("proj", WRITER),
            reader.writer_manifests("proj", WRITER),
            reader.chunk("proj", WRITER, chunk_id),
            reader.take_warnings(),
        )

    newest, kept, chunk, warnings = as_nobody(read)
    assert (newest, kept, chunk) == (None, [b"m1"], None)
    for path in locked:
        assert any(str(path) in w for w in warnings), (path, warnings)


def test_a_planted_entry_in_one_of_the_writers_projects_does_not_stop_its_other_pushes(
    world: World,
) -> None:
    """One bad object is refused by name and the rest goes on: a file planted where the
    writer's chunks of one project go fails that project's push, and the writer's other
    projects are pushed all the same; the sync then fails naming the entry."""
    alice, carol = world.nodes["alice"], world.nodes["carol"]
    carol.remember("the shared style guide lives in docs/", project="shared")
    carol.remember("carol writes the release notes")
    carol.sync()
    team = world.nodes["admin"].t.config.team
    chunks = world.folder / "sealmem" / team / "snapshots" / "shared" / carol.key.kid / "chunks"
    shutil.rmtree(chunks)
    chunks.write_bytes(b"planted")
    carol.remember("tabs, not spaces, in the style guide", project="shared")
    carol.remember("the release is on thursday")

    with pytest.raises(TransportError) as failed:
        carol.sync()

    assert str(chunks) in str(failed.value)
    alice.sync()
    contents = {m.content for m in alice.memories().values()}
    assert "the release is on thursday" in contents  # webapp was pushed past shared
    assert "tabs, not spaces, in the style guide" not in contents
