"""The blob store as a directory: ``{root}/{team}/{project}/{writer}/{chunk id}``.

Writes are durable before they return: temp file in the same directory,
fsync, rename over the old file (an overwrite refreshes the age), fsync of the
directory.  A blob's age is the time since its file was last renamed into
place (mtime).  Temp files of interrupted writes are removed by
:meth:`BlobDir.sweep` once old enough.  Names are validated by the caller.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from .blobs import BlobEntry, BlobKey, BlobStore
from .values import StorageError

__all__ = ["BlobDir"]

TEMP_PREFIX = ".tmp-"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class BlobDir(BlobStore):
    local = True

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StorageError(f"cannot create the blob directory {root}: {exc}") from exc

    def path(self, key: BlobKey) -> Path:
        return self.root.joinpath(*key.parts())

    def put(self, key: BlobKey, data: bytes) -> None:
        path = self.path(key)
        tmp = path.with_name(f"{TEMP_PREFIX}{path.name}-{os.getpid()}-{threading.get_ident()}")
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

    def get(self, key: BlobKey) -> bytes | None:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"cannot read a chunk blob under {self.root}: {exc}") from exc

    def delete(self, key: BlobKey) -> None:
        try:
            self.path(key).unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot delete a chunk blob under {self.root}: {exc}") from exc

    def _files(self) -> Iterator[tuple[tuple[str, ...], Path, float]]:
        """(relative directory parts, file, age in seconds) of every file."""
        now = time.time()
        for root, _dirs, names in os.walk(self.root):
            rel = Path(root).relative_to(self.root).parts
            for name in names:
                path = Path(root) / name
                try:
                    age = now - path.stat().st_mtime
                except FileNotFoundError:
                    continue
                yield rel, path, age

    def entries(self) -> Iterator[BlobEntry]:
        for rel, path, age in self._files():
            key = BlobKey.shaped([*rel, path.name])
            if key is not None:
                yield BlobEntry(key, age)

    def sweep(self, min_age_s: float) -> int:
        """Remove temp files and stray files (not at blob depth) older than ``min_age_s``."""
        removed = 0
        for rel, path, age in list(self._files()):
            stray = len(rel) != 3 or path.name.startswith(TEMP_PREFIX)
            if stray and age >= min_age_s:
                path.unlink(missing_ok=True)
                removed += 1
        return removed
