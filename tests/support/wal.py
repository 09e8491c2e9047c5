"""A real damaged write-ahead log: memories committed into ``store.db-wal`` by a process
that ends without checkpointing, then one byte of a WAL frame flipped on disk."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

__all__ = ["flip_wal_frame", "write_unchecked"]

_WRITER = """
import os, sys
from sealmem.client import MemoryStore
store = MemoryStore.open(sys.argv[1], author=sys.argv[2])
# every commit stays in the WAL: no automatic checkpoint restarts it part way, which
# would leave stale frames (the flip must land in a frame SQLite still reads)
store.connection.execute("PRAGMA wal_autocheckpoint = 0")
for i in range(int(sys.argv[3])):
    store.remember(f"committed memory {i}: the build cache lives in /var/cache/b{i}",
                   project="webapp", private=bool(i % 2))
os._exit(0)  # no close, so no checkpoint: the writes stay in store.db-wal
"""

_WAL_HEADER = 32
_FRAME_HEADER = 24


def write_unchecked(store: Path, author: str, count: int) -> None:
    """``count`` memories, each committed by ``remember``, left in the WAL."""
    env = {**os.environ, "SEALMEM_HOME": str(store.parent)}
    subprocess.run(
        [sys.executable, "-c", _WRITER, str(store), author, str(count)], check=True, env=env
    )
    assert Path(f"{store}-wal").stat().st_size > _WAL_HEADER, "nothing was left in the WAL"


def flip_wal_frame(store: Path, fraction: float = 0.125) -> int:
    """Flip one byte in the page of the frame ``fraction`` of the way into the WAL;
    SQLite drops that frame and every one after it on the next open.  Returns the frame."""
    wal = Path(f"{store}-wal")
    data = bytearray(wal.read_bytes())
    page_size = struct.unpack(">I", data[8:12])[0]
    frames = (len(data) - _WAL_HEADER) // (_FRAME_HEADER + page_size)
    frame = max(1, int(frames * fraction))
    data[_WAL_HEADER + frame * (_FRAME_HEADER + page_size) + _FRAME_HEADER + 100] ^= 0xFF
    wal.write_bytes(bytes(data))
    return frame
