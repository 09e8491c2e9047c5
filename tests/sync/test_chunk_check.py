"""The writer's check of its chunk files in a folder costs the same whatever the snapshot's size.

A process reads back (and hashes) at most ``CHECKED_CHUNKS`` chunk files it has not
verified or written itself per check; every chunk is still looked at, so a deleted
one is found at once, and a file that changed since this process verified or wrote
it is hashed again at once.  A damaged file the process never saw is found within
``ceil(n / CHECKED_CHUNKS)`` checks.
"""

from __future__ import annotations

import math
from pathlib import Path

from sealmem.client.sync.folder import FolderTransport
from sealmem.client.sync.folder_chunks import CHECKED_CHUNKS
from sealmem.client.sync.nofollow import SafeDir
from sealmem.crypto import SUITE
from sealmem.protocol.snapshot import chunk_id
from tests.sync.conftest import every_file

WRITER = "b" * 26
CHUNKS = 50


class Reading(FolderTransport):
    """The real folder transport, counting the chunk files it reads back to hash."""

    reads = 0

    def _intact(self, chunk_dir: SafeDir, chunk_id: str) -> bool:
        self.reads += 1
        return super()._intact(chunk_dir, chunk_id)


def _pushed(tmp_path: Path) -> tuple[list[str], Path]:
    writer = FolderTransport(tmp_path, "team1", ours=every_file)
    writer.prepare_new_team()
    chunks = {
        chunk_id(SUITE, data): data for data in (f"chunk {i}".encode() for i in range(CHUNKS))
    }
    writer.push("proj", WRITER, 1, b"m1", chunks)
    return sorted(chunks), writer.base / "snapshots" / "proj" / WRITER / "chunks"


def test_a_new_process_reads_back_a_bounded_sample(tmp_path: Path) -> None:
    ids, _ = _pushed(tmp_path)
    fresh = Reading(tmp_path, "team1", ours=every_file)
    assert fresh.damaged_chunks("proj", WRITER, ids) == set()
    assert fresh.reads == CHECKED_CHUNKS  # not one read per chunk
    checks = math.ceil(CHUNKS / CHECKED_CHUNKS)
    for _ in range(checks):
        fresh.damaged_chunks("proj", WRITER, ids)
    assert fresh.reads == CHUNKS  # each file read once, then known by its stamp
    fresh.damaged_chunks("proj", WRITER, ids)
    assert fresh.reads == CHUNKS


def test_a_damaged_file_is_found_within_a_few_checks(tmp_path: Path) -> None:
    ids, chunk_dir = _pushed(tmp_path)
    victim = ids[17]
    (chunk_dir / victim).write_bytes(b"garbage from a hostile share user")
    fresh = Reading(tmp_path, "team1", ours=every_file)
    found: set[str] = set()
    for _ in range(math.ceil(CHUNKS / CHECKED_CHUNKS)):
        found |= fresh.damaged_chunks("proj", WRITER, ids)
    assert found == {victim}


def test_a_deleted_chunk_is_found_at_once_without_reading(tmp_path: Path) -> None:
    ids, chunk_dir = _pushed(tmp_path)
    (chunk_dir / ids[3]).unlink()
    (chunk_dir / ids[4]).unlink()
    fresh = Reading(tmp_path, "team1", ours=every_file)
    assert {ids[3], ids[4]} <= fresh.damaged_chunks("proj", WRITER, ids)


def test_the_writing_process_finds_every_overwritten_chunk_at_once(tmp_path: Path) -> None:
    writer = Reading(tmp_path, "team1", ours=every_file)
    writer.prepare_new_team()
    chunks = {
        chunk_id(SUITE, data): data for data in (f"chunk {i}".encode() for i in range(CHUNKS))
    }
    writer.push("proj", WRITER, 1, b"m1", chunks)
    reads = writer.reads
    ids = sorted(chunks)
    assert writer.damaged_chunks("proj", WRITER, ids) == set()
    assert writer.reads == reads  # it wrote them: nothing read back
    chunk_dir = writer.base / "snapshots" / "proj" / WRITER / "chunks"
    for cid in ids[:20]:
        (chunk_dir / cid).write_bytes(b"x" * 5)  # in place: same inode, other size
    assert writer.damaged_chunks("proj", WRITER, ids) == set(ids[:20])
