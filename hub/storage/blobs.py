"""The blob-store seam (where a hub keeps chunk ciphertexts, one blob per key) and
the embedded store, a directory.

A key is ``team/project/writer/chunk id`` (:class:`BlobKey`); every part is
validated by the app before it gets here.  Implementations:

- :class:`BlobDir` (``file:///dir``): one file per blob, the embedded default,
  ``{root}/{team}/{project}/{writer}/{chunk id}``.  Writes are durable before
  they return: temp file in the same directory, fsync, rename over the old file
  (an overwrite refreshes the age), fsync of the directory.  A blob's age is
  the time since its file was last renamed into place (mtime).  Temp files of
  interrupted writes are removed by :meth:`BlobDir.sweep` once old enough;
- an S3-compatible bucket (``s3://bucket/prefix?endpoint=...``,
  :mod:`.s3`), opened by :mod:`.backends`.

What every implementation MUST guarantee:

- :meth:`BlobStore.put` returns only once the blob is durable (it survives a
  crash or a power loss of this host), and it *overwrites*: putting a key that
  exists replaces the bytes and refreshes its age to zero.  Readers never see a
  partly written blob (write-then-rename, or an object store's atomic PUT).
- :meth:`BlobStore.get` returns the whole blob or ``None`` when there is none.
- :meth:`BlobStore.delete` of an absent key is not an error.
- :meth:`BlobStore.entries` walks every key with its age in seconds (time
  since the last put); a listing may miss a blob put during the walk, never
  invent one.
- every failure of the backing store is raised as
  :class:`~sealmem.hub.storage.values.StorageError` (translated at this boundary).
- methods are blocking and thread-safe; the hub calls them from a thread pool.

The store knows nothing of rows: the ordering rule is :mod:`.chunks`'.
"""

from __future__ import annotations

import abc
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...protocol.encoding import HEX_HASH_RE, KID_RE
from .values import StorageError, storage_failure

__all__ = ["BlobDir", "BlobEntry", "BlobKey", "BlobStore"]

#: a team or project as a blob path part (both ids' patterns fit in it)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True, slots=True, order=True)
class BlobKey:
    """Where one chunk lives: the writer's slot and the chunk id."""

    team: str
    project: str
    writer: str
    chunk_id: str

    def parts(self) -> tuple[str, str, str, str]:
        return (self.team, self.project, self.writer, self.chunk_id)

    @classmethod
    def shaped(cls, parts: tuple[str, ...] | list[str]) -> BlobKey | None:
        """The key whose parts are ``parts`` if they are shaped as the hub names its
        blobs (a writer's kid, a 64-digit hex chunk id), else None: a file or object
        that is not the hub's (a listing skips it, so no job ever deletes it)."""
        if len(parts) != 4:
            return None
        team, project, writer, chunk_id = parts
        if (
            _NAME.fullmatch(team) is None
            or _NAME.fullmatch(project) is None
            or KID_RE.fullmatch(writer) is None
            or HEX_HASH_RE.fullmatch(chunk_id) is None
        ):
            return None
        return cls(team, project, writer, chunk_id)


@dataclass(frozen=True, slots=True)
class BlobEntry:
    """A stored blob, ``age_s`` seconds after it was last put."""

    key: BlobKey
    age_s: float


class BlobStore(abc.ABC):
    """Chunk ciphertexts by key; see the module docstring for the guarantees."""

    @abc.abstractmethod
    def put(self, key: BlobKey, data: bytes) -> None:
        """Store ``data`` at ``key`` durably, replacing what is there (age back to 0)."""

    @abc.abstractmethod
    def get(self, key: BlobKey) -> bytes | None: ...

    @abc.abstractmethod
    def delete(self, key: BlobKey) -> None: ...

    @abc.abstractmethod
    def entries(self) -> Iterator[BlobEntry]:
        """Every blob with its age (any order); names not shaped as the hub's
        (:meth:`BlobKey.shaped`) are skipped."""

    def sweep(self, min_age_s: float) -> int:
        """Remove the store's own leftovers older than ``min_age_s`` (temp files of
        interrupted puts, unfinished multipart uploads); count them."""
        return 0

    def close(self) -> None:  # noqa: B027 - optional: most stores hold nothing to close
        """Release connections or handles."""


TEMP_PREFIX = ".tmp-"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class BlobDir(BlobStore):
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
            raise storage_failure(
                f"cannot write a chunk blob under {self.root}: {exc}", exc
            ) from exc

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
