"""The blob-store seam: where a hub keeps chunk ciphertexts, one blob per key.

A key is ``team/project/writer/chunk id`` (:class:`BlobKey`); every part is
validated by the app before it gets here.  Implementations:

- :class:`sealmem.hub.blobs.BlobDir` (``file:///dir``): one file per blob,
  the embedded default;
- an S3-compatible bucket (``s3://bucket/prefix?endpoint=...``), registered in
  :mod:`sealmem.hub.backends`.

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
  :class:`~sealmem.hub.stored.StorageError` (translated at this boundary).
- methods are blocking and thread-safe; the hub calls them from a thread pool.

The store knows nothing of rows: the ordering rule (a blob is durable before
the row naming it commits, the row is deleted before its blob) is kept once,
in :class:`sealmem.hub.storage.Storage`.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ...protocol.encoding import HEX_HASH_RE, KID_RE

__all__ = ["BlobEntry", "BlobKey", "BlobStore"]

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

    #: :meth:`get` reads a local file (no network, no lock held across an fsync): a
    #: request may read a blob on the event loop
    local: bool = False

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
