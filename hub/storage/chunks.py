"""The chunk rules of every hub storage: a blob is durable before the row naming it
commits, a row is deleted before its blob; orphans go only past a minimum age; a
row whose blob is gone or damaged is dropped so that its writer uploads it again.

:class:`ChunkRules` implements them once over a few row primitives that each
metadata backend provides (``chunk_row_*``, ``chunk_rows_*``,
``missing_chunks``, ``usage``, ``member_usage``) and the backend's
:class:`~sealmem.hub.storage.blobs.BlobStore`.  The primitives MUST re-check their
conditions inside their own transaction: a row refreshed or referenced
meanwhile is kept.  See :mod:`sealmem.hub.storage` for the whole seam.

One race is left on purpose, because it heals: a blob deleted (as an orphan,
or after its row) at the moment the same chunk is uploaded again can leave a
row without its blob.  :meth:`ChunkRules.chunk` then drops the row, the hub
reports the chunk missing, and the writer, which reads back a sample of its
chunks at every sync, publishes that bucket again.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Iterable, Sequence

from .blobs import BlobEntry, BlobKey, BlobStore
from .values import Quota, QuotaExceeded, ScrubReport

__all__ = ["ANY_AGE_MS", "Check", "ChunkRules"]

log = logging.getLogger("sealmem.hub")

_PAGE = 500
Check = Callable[[int | None], None]
"""Run inside a chunk row's transaction with the team's generation read there (None: the
team has no row); it raises to refuse the row."""

#: a bound no stored_at reaches: "whatever its age"
ANY_AGE_MS = 2**62


class ChunkRules(abc.ABC):
    """Chunks as blob + row, in the one safe order; see the module docstring."""

    blobs: BlobStore
    quota: Quota

    @abc.abstractmethod
    def usage(self, team: str) -> int:
        """Bytes the team holds (objects and chunks)."""

    @abc.abstractmethod
    def member_usage(self, team: str, member: str) -> int:
        """Bytes of the member's chunks and manifests (:data:`TEAM_OWNER`: team objects)."""

    # -- row primitives: for the methods below, not for the app -------------------------

    @abc.abstractmethod
    def missing_chunks(self, team: str, project: str, writer: str, ids: Iterable[str]) -> list[str]:
        """The ids among ``ids`` the writer's slot holds no row for, sorted."""

    @abc.abstractmethod
    def chunk_row_add(
        self, key: BlobKey, size: int, now_ms: int, check: Check | None = None
    ) -> bool:
        """Insert the row (True), or refresh its stored_at if there (False); the
        writer's and the team's data quota, and ``check`` (given the team's generation
        as the transaction reads it; it raises to refuse), checked in the same
        transaction."""

    @abc.abstractmethod
    def chunk_rows(self, after: BlobKey | None, limit: int) -> list[tuple[BlobKey, int]]:
        """(key, size) of every chunk row in key order, after ``after``: a page."""

    @abc.abstractmethod
    def chunk_rows_named(self, keys: Sequence[BlobKey]) -> set[BlobKey]:
        """Those of ``keys`` that have a row."""

    @abc.abstractmethod
    def chunk_rows_of_writer(
        self, team: str, project: str, writer: str, stored_before_ms: int
    ) -> list[str]:
        """Ids of the writer's chunks stored (or refreshed) before ``stored_before_ms``."""

    @abc.abstractmethod
    def chunk_rows_unreferenced(
        self,
        stored_before_ms: int,
        *,
        team: str | None = None,
        writer: str | None = None,
        limit: int = _PAGE,
    ) -> list[BlobKey]:
        """Chunks no kept manifest of their slot names, stored before the bound."""

    @abc.abstractmethod
    def chunk_rows_remove(
        self, keys: Sequence[BlobKey], *, stored_before_ms: int, unreferenced: bool
    ) -> list[BlobKey]:
        """Delete those rows still stored before the bound (and, if ``unreferenced``,
        still named by no kept manifest), in one transaction; the usage goes down by
        their sizes.  Return the keys deleted."""

    # -- chunks: the blob/row ordering, once for every backend ------------------------

    def put_chunk(
        self,
        team: str,
        project: str,
        writer: str,
        chunk_id: str,
        data: bytes,
        now_ms: int,
        check: Check | None = None,
    ) -> bool:
        """Store a chunk whose id the caller checked: blob durable first, then the row.

        Putting an id already held rewrites the blob (a damaged one is repaired) and
        refreshes its age; False when the row was already there.  ``check`` runs inside
        the row's transaction, given the team's generation there (what it raises
        refuses the row; the blob is left an orphan)."""
        key = BlobKey(team, project, writer, chunk_id)
        self._check_room(team, writer, len(data))
        self.blobs.put(key, data)
        try:
            return self.chunk_row_add(key, len(data), now_ms, check)
        except QuotaExceeded:
            if not self.chunk_rows_named([key]):
                self.blobs.delete(key)
            raise

    def _check_room(self, team: str, writer: str, incoming: int) -> None:
        """Refuse before writing a blob that the transaction would refuse anyway."""
        self.quota.check(
            team,
            writer,
            incoming,
            lambda: self.usage(team),
            lambda: self.member_usage(team, writer),
        )

    def chunk(self, team: str, project: str, writer: str, chunk_id: str) -> bytes | None:
        """The chunk's bytes; a row whose blob is gone is dropped (the writer re-uploads)."""
        data = self.chunk_read(team, project, writer, chunk_id)
        if isinstance(data, BlobKey):
            self.drop_blobless(data)
            return None
        return data

    def chunk_read(
        self, team: str, project: str, writer: str, chunk_id: str
    ) -> bytes | BlobKey | None:
        """The chunk's bytes, None if the slot holds no such chunk, or its key if the row
        is there but the blob is gone: the caller then drops the row
        (:meth:`drop_blobless`, a write).  Reads only."""
        if self.missing_chunks(team, project, writer, [chunk_id]):
            return None
        key = BlobKey(team, project, writer, chunk_id)
        data = self.blobs.get(key)
        return key if data is None else data

    def drop_blobless(self, key: BlobKey, seen_at_ms: int = ANY_AGE_MS) -> None:
        """Drop the row of a chunk whose blob is gone, so that it reads as missing.

        ``seen_at_ms``: when the row was read without its blob.  A row stored since (the
        writer uploaded the chunk again, blob and row, meanwhile) is kept."""
        if self.chunk_rows_remove([key], stored_before_ms=seen_at_ms, unreferenced=False):
            log.warning("chunk %s of %s/%s/%s has no blob: dropped its row",
                        key.chunk_id[:16], key.team, key.project, key.writer)  # fmt: skip

    def _remove(self, keys: Sequence[BlobKey], *, stored_before_ms: int, unreferenced: bool) -> int:
        gone = self.chunk_rows_remove(
            keys, stored_before_ms=stored_before_ms, unreferenced=unreferenced
        )
        for key in gone:  # rows first, then blobs: a crash leaves only orphans
            self.blobs.delete(key)
        return len(gone)

    def collect(
        self, team: str, project: str, writer: str, keep: set[str], older_than_ms: int
    ) -> int:
        """Delete the writer's chunks not in ``keep`` stored before ``older_than_ms``.

        A chunk a kept manifest names is never removed, even if ``keep`` misses it: the
        caller read ``keep`` before this runs, and a manifest naming an old chunk may
        have committed since (the rows are re-checked in the deleting transaction)."""
        ids = self.chunk_rows_of_writer(team, project, writer, older_than_ms)
        keys = [BlobKey(team, project, writer, i) for i in ids if i not in keep]
        removed = 0
        for i in range(0, len(keys), _PAGE):
            part = keys[i : i + _PAGE]
            removed += self._remove(part, stored_before_ms=older_than_ms, unreferenced=True)
        return removed

    def expire_unreferenced(self, stored_before_ms: int) -> int:
        """Delete chunks no kept manifest names, stored before the bound (all teams)."""
        return self._drain(stored_before_ms, None, None)

    def drop_unreferenced(self, team: str, writer: str) -> int:
        """Delete a (revoked) writer's chunks no kept manifest names, whatever their age."""
        return self._drain(ANY_AGE_MS, team, writer)

    def _drain(self, before_ms: int, team: str | None, writer: str | None) -> int:
        removed = 0
        while True:
            keys = self.chunk_rows_unreferenced(before_ms, team=team, writer=writer)
            if not keys:
                return removed
            n = self._remove(keys, stored_before_ms=before_ms, unreferenced=True)
            removed += n
            if n == 0:  # referenced or refreshed meanwhile: leave them for the next run
                return removed

    def collect_orphans(self, min_age_s: float) -> int:
        """Delete blobs no row names once they are ``min_age_s`` old; count them.

        ``min_age_s`` must cover the longest put in flight (blob written, row not yet
        committed) on any replica: the hub never calls this with 0."""
        removed = self.blobs.sweep(min_age_s)
        batch: list[BlobEntry] = []
        for entry in self.blobs.entries():
            if entry.age_s >= min_age_s:
                batch.append(entry)
            if len(batch) >= _PAGE:
                removed += self._orphans(batch, min_age_s)
                batch = []
        return removed + self._orphans(batch, min_age_s)

    def _orphans(self, batch: Sequence[BlobEntry], min_age_s: float) -> int:
        if not batch:
            return 0
        named = self.chunk_rows_named([e.key for e in batch])
        removed = 0
        for entry in batch:
            if entry.key not in named:
                self.blobs.delete(entry.key)
                removed += 1
        return removed

    def scrub(self, verify: Callable[[BlobKey, bytes], bool]) -> ScrubReport:
        """Re-check every chunk's blob with ``verify`` (its id is the hash of its bytes);
        drop the rows, then the blobs, of damaged and missing ones, so that the hub
        reports them missing and their writers upload them again."""
        checked = damaged = missing = 0
        after: BlobKey | None = None
        while True:
            page = self.chunk_rows(after, _PAGE)
            if not page:
                return ScrubReport(checked, damaged, missing)
            for key, _size in page:
                checked += 1
                data = self.blobs.get(key)
                if data is not None and verify(key, data):
                    continue
                if data is None:
                    missing += 1
                else:
                    damaged += 1
                log.warning("scrub: chunk %s of %s/%s/%s is %s: dropped", key.chunk_id[:16],
                            key.team, key.project, key.writer,
                            "missing" if data is None else "damaged")  # fmt: skip
                self._remove([key], stored_before_ms=ANY_AGE_MS, unreferenced=False)
            after = page[-1][0]
