"""Which of a writer's chunk files in a shared folder are intact, at a bounded cost.

Anyone with write access may overwrite a chunk file, so a writer checks the chunks its
manifest lists before it builds on them (``FolderTransport.damaged_chunks``).  Every
chunk is looked at (one ``lstat``): a file is hashed again once its size, inode, mtime
or ctime changed since it last verified in this process (or since this process wrote
it).  Files this process never verified are read and hashed :data:`CHECKED_CHUNKS` at a
time, a random sample per call, as over a hub, so a first sync does not read back a
whole snapshot; a damaged one among them is found within a few syncs.
"""

from __future__ import annotations

import contextlib
import os
import random
import stat
from collections.abc import Callable, Iterable

from .nofollow import SafeDir, Unusable
from .transport import CHECKED_CHUNKS

__all__ = ["Verified"]


_Stamp = tuple[int, int, int, int]


def _stamp(found: os.stat_result) -> _Stamp:
    """What changes when a file is rewritten: size, inode, mtime, ctime."""
    return (found.st_size, found.st_ino, found.st_mtime_ns, found.st_ctime_ns)


class Verified:
    """The chunk files found intact in this process, with the stamp each had then."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], _Stamp] = {}

    def note(self, project: str, writer: str, chunk_id: str, found: os.stat_result) -> None:
        """``chunk_id`` was written or found intact with ``found``'s stamp."""
        self._seen[(project, writer, chunk_id)] = _stamp(found)

    def damaged(
        self,
        project: str,
        writer: str,
        chunk_dir: SafeDir,
        chunk_ids: Iterable[str],
        intact: Callable[[SafeDir, str], bool],
    ) -> set[str]:
        """Which of ``chunk_ids`` in ``chunk_dir`` are missing, not regular files, or (when
        checked) do not hash to their id (``intact`` reads and hashes one)."""
        damaged = set()
        unknown: list[tuple[str, _Stamp]] = []
        for c in chunk_ids:
            found = None
            with contextlib.suppress(Unusable):
                found = chunk_dir.lstat(c)
            if found is None or not stat.S_ISREG(found.st_mode):
                damaged.add(c)
                continue
            key, stamp = (project, writer, c), _stamp(found)
            known = self._seen.get(key)
            if known == stamp:
                continue
            if known is None:
                unknown.append((c, stamp))
            elif intact(chunk_dir, c):
                self._seen[key] = stamp
            else:
                damaged.add(c)
        if len(unknown) > CHECKED_CHUNKS:
            unknown = random.sample(unknown, CHECKED_CHUNKS)
        for c, stamp in unknown:
            if intact(chunk_dir, c):
                self._seen[(project, writer, c)] = stamp
            else:
                damaged.add(c)
        return damaged
