"""Where the hub keeps a team's objects: the metadata seam over a blob store.

A hub's storage is two parts, chosen by URL (:mod:`sealmem.hub.backends`):

- **metadata** (this interface): small signed objects (rosters, keyrings,
  manifests, join requests) as rows, chunk rows (size, when stored, who uses
  the space), the per-team change feed, and what several replicas must share:
  the nonce cache, the rate-limit buckets, the team's generation (so every
  replica's cache of a team's trusted state can tell it is stale), and the
  wake-ups of long-polling readers (:meth:`Storage.feed`).
  :class:`~sealmem.hub.sqlite_storage.SQLiteStorage` is the embedded one; a
  PostgreSQL one implements the same methods.
- **blobs** (:class:`~sealmem.hub.blobstore.BlobStore`): chunk ciphertexts.

The ordering rule between the two is kept here, once, for every backend: a
chunk's blob is durable *before* the row naming it commits, and a row is
deleted *before* its blob.  A crash leaves at worst a blob no row names; one
job (:meth:`Storage.collect_orphans`) removes those once they are older than a
minimum age (a blob younger than that may belong to a put still in flight on
another replica).  A row whose blob went missing or was damaged heals: the
row is dropped (:meth:`Storage.chunk`, :meth:`Storage.scrub`), so the hub
reports the chunk missing and the writer's next push uploads it again; putting
a chunk always rewrites its blob.

What every metadata backend MUST guarantee:

- every method is blocking, thread-safe and safe to call from several
  processes (replicas) at once; ids passed in are already validated;
- :meth:`Storage.write` is a transaction holding the team's write lock across
  processes (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the team row ``FOR
  UPDATE``): the caller verifies against the state it reads inside and writes
  in the same transaction, all or nothing.  Each change it records takes the
  team's next cursor (a column of the team row, incremented in that
  transaction): cursors count per team from 1, in commit order, and one team's
  activity never shows in another team's cursor.  Rosters and keyrings also
  bump the team's generation (:meth:`Storage.generation`);
- :meth:`TeamWrite.put_manifest` is a compare-and-swap on the writer's seq
  (:class:`StaleSeq`) and checks, inside the transaction, that the slot holds
  every chunk the manifest names (:class:`MissingChunks`); a duplicate roster
  version and a stale keyring raise :class:`Conflict`;
- quotas (:class:`Quota`) are checked inside the transaction that stores,
  against usage kept per team and per member (:class:`QuotaExceeded`);
- :meth:`Storage.remember_nonce` is atomic across replicas and survives a
  restart until the nonce expires; :meth:`Storage.take_token` shares a bucket
  across replicas (an embedded backend that one process serves alone, as the
  SQLite one is under its ``hub.lock``, may keep buckets in memory);
- the ``chunk_rows_*`` primitives re-check their conditions inside their own
  transaction (a row refreshed or referenced meanwhile is kept);
- failures of the engine are raised as :class:`StorageError`.

Storage never checks signatures or grants: that is :mod:`sealmem.hub.teams`.
"""

from __future__ import annotations

import abc
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from .blobstore import BlobEntry, BlobKey, BlobStore
from .feed import Feed, LocalFeed
from .stored import (
    TEAM_OWNER,
    Admission,
    Change,
    Conflict,
    KeyringBlob,
    MissingChunks,
    PendingRequest,
    Quota,
    QuotaExceeded,
    ScrubReport,
    StaleSeq,
    StorageError,
    StoredHead,
)

__all__ = [
    "TEAM_OWNER",
    "Admission",
    "BlobKey",
    "Change",
    "Conflict",
    "KeyringBlob",
    "MissingChunks",
    "PendingRequest",
    "Quota",
    "QuotaExceeded",
    "ScrubReport",
    "StaleSeq",
    "Storage",
    "StorageError",
    "StoredHead",
    "TeamWrite",
]

log = logging.getLogger("sealmem.hub")

_PAGE = 500
#: a bound no stored_at reaches: "whatever its age"
ANY_AGE_MS = 2**62


class TeamWrite(abc.ABC):
    """One transaction holding a team's write lock (see :meth:`Storage.write`)."""

    @property
    @abc.abstractmethod
    def generation(self) -> int | None:
        """The team's generation as this transaction sees it; None: not registered."""

    @abc.abstractmethod
    def heads(self) -> list[StoredHead]:
        """The newest manifest of every slot of the team, read inside the transaction."""

    @abc.abstractmethod
    def put_roster(
        self,
        version: int,
        data: bytes,
        members: Sequence[tuple[str, bytes]],
        keyrings: Sequence[KeyringBlob],
        now_ms: int,
    ) -> None:
        """Store a verified roster version (v1 registers the team), the (kid, sign_public)
        of its members and the keyrings citing it; :class:`Conflict` if the version (or
        at v1 the team) is already there.  Control objects: they may use the reserve."""

    @abc.abstractmethod
    def put_keyring(self, keyring: KeyringBlob, now_ms: int) -> None:
        """Store a verified keyring; :class:`Conflict` if the stored one for its
        (project, epoch) cites a newer roster, or the same roster with other bytes."""

    @abc.abstractmethod
    def put_manifest(
        self, head: StoredHead, data: bytes, chunk_ids: Sequence[str], keep: int, now_ms: int
    ) -> None:
        """Store a verified manifest naming ``chunk_ids`` if ``head.seq`` is above the
        slot's newest (else :class:`StaleSeq`) and the slot holds every chunk (else
        :class:`MissingChunks`); keep the ``keep`` newest of the slot."""

    @abc.abstractmethod
    def drop_writer(self, writer: str, pins: Mapping[str, int]) -> int:
        """A revoked writer: delete its manifests except, per project, the pinned seq
        in ``pins``; count them.  Its chunks no kept manifest names become unreferenced
        (:meth:`Storage.drop_unreferenced` removes them after the commit)."""


class Storage(abc.ABC):
    """The hub's persistence; see the module docstring."""

    def __init__(self, blobs: BlobStore, quota: Quota | None = None) -> None:
        self.blobs = blobs
        self.quota = quota or Quota()

    def close(self) -> None:
        self.blobs.close()

    def feed(self) -> Feed:
        """Wake-ups of long-polling readers (in-process unless the backend shares them)."""
        return LocalFeed()

    # -- teams, rosters, keyrings ----------------------------------------------------

    @abc.abstractmethod
    def team_exists(self, team: str) -> bool: ...

    @abc.abstractmethod
    def team_count(self) -> int: ...

    @abc.abstractmethod
    def generation(self, team: str) -> int | None:
        """The team's generation (bumped by every roster or keyring write), cheaply;
        None if the team is not registered."""

    @abc.abstractmethod
    def write(self, team: str) -> contextlib.AbstractContextManager[TeamWrite]:
        """A transaction holding ``team``'s write lock; commits on a normal exit."""

    @abc.abstractmethod
    def rosters(self, team: str, after_version: int) -> list[bytes]:
        """Roster envelopes above ``after_version``, in version order."""

    @abc.abstractmethod
    def keyrings(self, team: str, project: str | None = None) -> list[KeyringBlob]:
        """Keyrings of one project (or all), oldest epoch first."""

    @abc.abstractmethod
    def keys_of(self, kid: str) -> list[tuple[str, bytes]]:
        """(team, sign_public) for every team whose roster lists ``kid``."""

    # -- manifests -------------------------------------------------------------------

    @abc.abstractmethod
    def heads(self, team: str) -> list[StoredHead]: ...

    @abc.abstractmethod
    def manifests(
        self, team: str, project: str, writer: str | None = None
    ) -> dict[str, list[bytes]]:
        """Per writer, its kept manifest envelopes, newest first."""

    @abc.abstractmethod
    def newest_seqs(self, team: str, project: str) -> dict[str, int]: ...

    # -- usage -----------------------------------------------------------------------

    @abc.abstractmethod
    def usage(self, team: str) -> int:
        """Bytes the team holds (objects and chunks)."""

    @abc.abstractmethod
    def member_usage(self, team: str, member: str) -> int:
        """Bytes of the member's chunks and manifests (:data:`TEAM_OWNER`: team objects)."""

    @abc.abstractmethod
    def total_usage(self) -> int: ...

    # -- join requests ---------------------------------------------------------------

    # A request posted at or before ``live_after_ms`` has expired: it is not returned,
    # authenticates nobody, holds no slot, and the next offer deletes it.

    @abc.abstractmethod
    def offer_request(
        self,
        team: str,
        kid: str,
        data: bytes,
        address: str,
        now_ms: int,
        *,
        live_after_ms: int,
        max_pending: int,
        max_per_address: int,
    ) -> Admission:
        """In one transaction: delete the team's expired requests; then store this one if
        ``kid`` already has a live request (replaced in its own slot) or the inbox holds
        fewer than ``max_pending`` live requests, fewer than ``max_per_address`` of them
        posted from ``address``."""

    @abc.abstractmethod
    def request(self, team: str, kid: str, live_after_ms: int | None = None) -> bytes | None: ...

    @abc.abstractmethod
    def requests(self, team: str, live_after_ms: int | None = None) -> list[PendingRequest]:
        """The team's live requests, by kid."""

    @abc.abstractmethod
    def remove_request(self, team: str, kid: str) -> bool: ...

    # -- change feed -----------------------------------------------------------------

    @abc.abstractmethod
    def changes(self, team: str, since: int, limit: int = 1000) -> list[Change]:
        """The team's changes with a cursor above ``since``, oldest first."""

    @abc.abstractmethod
    def cursor(self, team: str) -> int:
        """The team's newest cursor (0 before any change)."""

    # -- state several replicas share ------------------------------------------------

    @abc.abstractmethod
    def remember_nonce(self, kid: str, nonce: str, expires_ms: int, now_ms: int) -> bool:
        """Record (kid, nonce) until ``expires_ms``; False if it is already recorded and
        not expired (a replay).  Expired nonces are purged along the way."""

    @abc.abstractmethod
    def take_token(self, key: str, rate_per_s: float, burst: int, now_ms: int) -> float:
        """Spend one token of bucket ``key`` (refilled at ``rate_per_s``, holding at most
        ``burst``): 0.0 when spent, else the seconds until one is there (nothing spent)."""

    # -- chunk rows: primitives for the methods below, not for the app ------------------

    @abc.abstractmethod
    def missing_chunks(self, team: str, project: str, writer: str, ids: Iterable[str]) -> list[str]:
        """The ids among ``ids`` the writer's slot holds no row for, sorted."""

    @abc.abstractmethod
    def chunk_row_add(self, key: BlobKey, size: int, now_ms: int) -> bool:
        """Insert the row (True), or refresh its stored_at if there (False); the
        writer's and the team's data quota checked in the same transaction."""

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
        self, team: str, project: str, writer: str, chunk_id: str, data: bytes, now_ms: int
    ) -> bool:
        """Store a chunk whose id the caller checked: blob durable first, then the row.

        Putting an id already held rewrites the blob (a damaged one is repaired) and
        refreshes its age; False when the row was already there."""
        key = BlobKey(team, project, writer, chunk_id)
        self._check_room(team, writer, len(data))
        self.blobs.put(key, data)
        try:
            return self.chunk_row_add(key, len(data), now_ms)
        except QuotaExceeded:
            if not self.chunk_rows_named([key]):
                self.blobs.delete(key)
            raise

    def _check_room(self, team: str, writer: str, incoming: int) -> None:
        """Refuse before writing a blob that the transaction would refuse anyway."""
        quota = self.quota
        used = self.usage(team)
        if used + incoming > quota.data_limit():
            raise QuotaExceeded(team, TEAM_OWNER, used, incoming, quota.data_limit())
        if quota.member_bytes is not None:
            mine = self.member_usage(team, writer)
            if mine + incoming > quota.member_bytes:
                raise QuotaExceeded(team, writer, mine, incoming, quota.member_bytes)

    def chunk(self, team: str, project: str, writer: str, chunk_id: str) -> bytes | None:
        """The chunk's bytes; a row whose blob is gone is dropped (the writer re-uploads)."""
        if self.missing_chunks(team, project, writer, [chunk_id]):
            return None
        key = BlobKey(team, project, writer, chunk_id)
        data = self.blobs.get(key)
        if data is None:
            log.warning("chunk %s of %s/%s/%s has no blob: dropped its row", chunk_id[:16],
                        team, project, writer)  # fmt: skip
            self.chunk_rows_remove([key], stored_before_ms=ANY_AGE_MS, unreferenced=False)
        return data

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
        """Delete the writer's chunks not in ``keep`` stored before ``older_than_ms``."""
        ids = self.chunk_rows_of_writer(team, project, writer, older_than_ms)
        keys = [BlobKey(team, project, writer, i) for i in ids if i not in keep]
        removed = 0
        for i in range(0, len(keys), _PAGE):
            part = keys[i : i + _PAGE]
            removed += self._remove(part, stored_before_ms=older_than_ms, unreferenced=False)
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
