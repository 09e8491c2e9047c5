"""Which of a writer's chunk files in a shared folder are intact, at a bounded cost.

Anyone with write access may overwrite a chunk file, so a writer checks the chunks its
manifest lists before it builds on them (``FolderTransport.damaged_chunks``).  Every
chunk is looked at (one ``lstat``): a file is hashed again once its size, inode, mtime
or ctime changed since it last verified in this process (or since this process wrote
it).  A chunk a reader reported as a hole (:func:`report`, :func:`reported`) is always
hashed again.  The other files this process never verified are read and hashed
:data:`CHECKED_CHUNKS` at a time, a random sample per call, so a first sync does not
read back a whole snapshot.

Hole reports (SPEC "Partial reads"): a reader that could not read chunks of a writer's
manifest leaves ``holes/{project}/{writer}/{reader}.json``, the sorted list of their ids
(an empty read removes it).  The file is not signed and needs not be: it only makes
the writer hash those of its own chunks again, which a forged report cannot turn into
anything but a bounded read (at most :data:`MAX_REPORTS` reports are read per sync).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import stat
from collections.abc import Callable, Iterable, Sequence

from ...protocol.encoding import HEX_HASH_RE, KID_RE
from ...protocol.errors import TransportError
from ...protocol.manifest import MAX_BUCKETS
from .folder_dirs import TeamDirs
from .nofollow import SafeDir, Unusable

__all__ = ["CHECKED_CHUNKS", "MAX_REPORTS", "Verified", "report", "reported"]

#: Own chunks a writer reads back per project and sync when nothing says they changed
#: (a disk flipped a bit under the same stamps): a larger snapshot is sampled.
CHECKED_CHUNKS = 8

#: The most bytes one reader's hole report may take (every bucket listed, compact JSON).
_MAX_REPORT_BYTES = MAX_BUCKETS * 67 + 2

#: Hole reports a writer reads per project and sync: a random draw when there are more
#: (anyone who can write to the folder can plant reports; a real one is read in time).
MAX_REPORTS = 32


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
        suspect: frozenset[str] = frozenset(),
    ) -> set[str]:
        """Which of ``chunk_ids`` in ``chunk_dir`` are missing, not regular files, or (when
        checked) do not hash to their id (``intact`` reads and hashes one); those in
        ``suspect`` (reported by readers) are always checked."""
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
            if c in suspect:  # a reader could not read it: whatever its stamp says
                if intact(chunk_dir, c):
                    self._seen[key] = stamp
                else:
                    damaged.add(c)
                continue
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


def _holes_dir(project: str, writer: str) -> tuple[str, str, str]:
    return ("holes", project, writer)


def report(dirs: TeamDirs, project: str, writer: str, reader: str, ids: Sequence[str]) -> None:
    """Leave (or, with no ``ids``, remove) ``reader``'s report of ``writer``'s chunks it
    could not read; a folder that refuses the write costs the report only."""
    if not KID_RE.fullmatch(reader):
        return
    name = f"{reader}.json"
    with contextlib.suppress(TransportError, OSError):
        if not ids:
            with dirs.reading(*_holes_dir(project, writer)) as d:
                if d is not None and name in dirs.names(d):
                    d.unlink(name)
            return
        body = json.dumps(sorted(set(ids))[:MAX_BUCKETS], separators=(",", ":")).encode()
        with dirs.writing(*_holes_dir(project, writer)) as d:
            d.write(name, body)


def reported(dirs: TeamDirs, project: str, writer: str) -> frozenset[str]:
    """Every chunk id the readers' reports name for ``writer`` (malformed ones ignored),
    of at most :data:`MAX_REPORTS` reports."""
    found: set[str] = set()
    with dirs.reading(*_holes_dir(project, writer)) as d:
        names = [n for n in dirs.names(d) if n.endswith(".json") and KID_RE.fullmatch(n[:-5])]
        if len(names) > MAX_REPORTS:
            names = random.sample(names, MAX_REPORTS)
        for name in names:
            data = dirs.read(d, name, _MAX_REPORT_BYTES)
            try:
                value = json.loads(data or b"[]")
            except (ValueError, RecursionError):  # not JSON, or arrays nested too deeply
                continue
            if isinstance(value, list):
                found.update(c for c in value[:MAX_BUCKETS] if isinstance(c, str))
    return frozenset(c for c in found if HEX_HASH_RE.fullmatch(c))
