"""A writer's chunk files damaged or deleted in the shared folder heal on its next sync.

Anyone with write access to the share can overwrite or delete chunk files.  The
writer checks, on each sync, that every chunk its newest manifest lists is in the
folder with bytes that hash to its id; the buckets of those that are not are
encrypted again and published under a new manifest, so readers stop refusing
``bad-chunk-id`` / ``missing-chunk`` after one sync of the writer, even when the
writer has nothing new to say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.client.sync.folder import FolderTransport
from sealmem.crypto import SUITE
from sealmem.protocol import reasons
from sealmem.protocol.snapshot import chunk_id
from tests.sync.conftest import PROJECT, Node, World, every_file

NOTES = [f"carol's note number {i} about the deploy pipeline" for i in range(40)]


def _chunks(world: World, node: Node) -> list[Path]:
    team = world.nodes["admin"].t.config.team
    return sorted(
        (
            world.folder / "sealmem" / team / "snapshots" / PROJECT / node.key.kid / "chunks"
        ).iterdir()
    )


def _contents(node: Node) -> set[str]:
    return {m.content for m in node.memories().values()}


@pytest.mark.slow
def test_overwritten_and_deleted_chunks_heal_on_the_writers_next_sync(world: World) -> None:
    alice, carol = world.nodes["alice"], world.nodes["carol"]
    for note in NOTES:
        carol.remember(note)
    carol.sync()
    chunks = _chunks(world, carol)
    assert len(chunks) > 2
    for path in chunks[:-1]:
        path.write_bytes(b"garbage from a hostile share user")
    chunks[-1].unlink()
    refused = alice.sync().refused
    assert [r.reason for r in refused] in ([reasons.BAD_CHUNK_ID], [reasons.MISSING_CHUNK])

    summary = carol.sync()  # nothing new to say: the writer heals anyway

    assert summary.pushed_chunks == len(chunks)  # every bucket encrypted again
    rewritten = set(_chunks(world, carol)) - set(chunks)
    assert len(rewritten) == len(chunks)
    for path in rewritten:
        assert chunk_id(SUITE, path.read_bytes()) == path.name
    after = alice.sync()
    assert after.refused == []
    assert set(NOTES) <= _contents(alice)
    assert carol.sync().pushed_chunks == 0  # healed: the next sync publishes nothing


def test_a_damaged_file_under_a_new_chunks_id_is_rewritten(tmp_path: Path) -> None:
    folder = FolderTransport(tmp_path, "team1", ours=every_file)
    folder.prepare_new_team()
    good = b"the real ciphertext"
    cid = chunk_id(SUITE, good)
    chunk_dir = folder.base / "snapshots" / "proj" / ("b" * 26) / "chunks"
    chunk_dir.mkdir(parents=True)
    (chunk_dir / cid).write_bytes(b"planted before the writer wrote it")
    folder.push("proj", "b" * 26, 1, b"m1", {cid: good})
    assert folder.chunk("proj", "b" * 26, cid) == good
    assert folder.damaged_chunks("proj", "b" * 26, [cid]) == set()
    (chunk_dir / cid).write_bytes(b"x" * len(good))  # same size, other bytes
    assert folder.damaged_chunks("proj", "b" * 26, [cid]) == {cid}


@pytest.mark.slow
def test_only_the_damaged_buckets_are_encrypted_again(world: World) -> None:
    alice, carol = world.nodes["alice"], world.nodes["carol"]
    for note in NOTES:
        carol.remember(note)
    carol.sync()
    chunks = _chunks(world, carol)
    damaged = chunks[len(chunks) // 2]
    damaged.write_bytes(b"x" * damaged.stat().st_size)  # same size, other bytes

    assert carol.sync().pushed_chunks == 1

    assert alice.sync().refused == []
    assert set(NOTES) <= _contents(alice)
