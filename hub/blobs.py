"""A directory of chunk blobs, ``{root}/{team}/{project}/{writer}/{chunk id}``.

Writes are durable before they return: temp file in the same directory,
fsync, rename, fsync of the directory.  Names are validated by the caller.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .storage import StorageError

__all__ = ["BlobDir"]

TEMP_PREFIX = ".tmp-"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class BlobDir:
    def __init__(self, root: Path) -> None:
        self.root = root
        try:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StorageError(f"cannot create the blob directory {root}: {exc}") from exc

    def path(self, team: str, project: str, writer: str, chunk_id: str) -> Path:
        return self.root / team / project / writer / chunk_id

    def write(self, path: Path, data: bytes) -> None:
        """Write ``data`` at ``path`` durably (the blob survives a crash once this returns)."""
        tmp = path.with_name(f"{TEMP_PREFIX}{path.name}-{threading.get_ident()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            _fsync_dir(path.parent)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StorageError(f"cannot write a chunk blob under {self.root}: {exc}") from exc

    @staticmethod
    def read(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot read a chunk blob: {exc}") from exc

    def files(self, min_age_s: float) -> Iterator[tuple[tuple[str, ...], Path]]:
        """(relative parts of the directory, file) for files older than ``min_age_s``."""
        cutoff = time.time() - min_age_s
        for root, _dirs, names in os.walk(self.root):
            rel = Path(root).relative_to(self.root).parts
            for name in names:
                path = Path(root) / name
                try:
                    if path.stat().st_mtime <= cutoff:
                        yield rel, path
                except FileNotFoundError:
                    continue

    def remove_unnamed(self, min_age_s: float, named: Callable[[str, str, str, str], bool]) -> int:
        """Delete temp files and blobs for which ``named(team, project, writer, id)`` is false."""
        removed = 0
        for rel, path in list(self.files(min_age_s)):
            keep = (
                len(rel) == 3
                and not path.name.startswith(TEMP_PREFIX)
                and named(rel[0], rel[1], rel[2], path.name)
            )
            if not keep:
                path.unlink(missing_ok=True)
                removed += 1
        return removed
