"""Where the hub keeps a team's objects: the metadata seam over a blob store.

A hub's storage is two parts, chosen by URL (:mod:`.backends`):

- **metadata** (this interface): small signed objects (rosters, keyrings,
  manifests, join requests) as rows, chunk rows (size, when stored, who uses
  the space), the per-team change feed, and what several replicas must share:
  the nonce cache, the rate-limit buckets, the team's generation (so every
  replica's cache of a team's trusted state can tell it is stale), and the
  wake-ups of long-polling readers (:meth:`Storage.feed`).
  Both backends, :class:`~sealmem.hub.storage.sqlite.SQLiteStorage` (the embedded
  one) and :class:`~sealmem.hub.storage.postgres.PgStorage`, are one SQL layer
  (:mod:`.sql`, :mod:`.writes`) over a dialect (:mod:`.dialect`).
- **blobs** (:class:`~sealmem.hub.storage.blobs.BlobStore`): chunk ciphertexts.

The ordering rule between the two is kept once, for every backend (:mod:`.chunks`): a
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
  processes (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the team's advisory
  lock): the caller verifies against the state it reads inside and writes
  in the same transaction, all or nothing.  Each change it records takes the
  team's next cursor (a column of the team row, incremented in that
  transaction): cursors count per team from 1, in commit order, and one team's
  activity never shows in another team's cursor.  Rosters and keyrings also
  bump the team's generation (:meth:`Storage.generation`);
- :meth:`TeamWrite.put_manifest` is a compare-and-swap on the writer's seq
  (:class:`StaleSeq`) and checks, inside the transaction, that the slot holds
  every chunk the manifest names (:class:`MissingChunks`) and, for a delta
  manifest, the base it is listed against (:class:`MissingBase`), which it then
  keeps while the newest manifest names it; a duplicate roster
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

Storage never checks signatures or grants: that is :mod:`sealmem.hub.teams`.  It
never imports the HTTP runtime either: what it offers a committer thread is a
:class:`Runner`.

The room: this seam, its values and errors (:mod:`.values`), the chunk rules
(:mod:`.chunks`), wake-ups (:mod:`.feed`); the blob stores (:mod:`.blobs`,
:mod:`.s3`); the SQL metadata layer (:mod:`.sql`, :mod:`.writes`) over a
dialect (:mod:`.dialect`), and its two backends: :mod:`.sqlite` (over
:mod:`.dbfile`, :mod:`.group`, :mod:`.nonces`, :mod:`.buckets`) and
:mod:`.postgres`; both schemas (:mod:`.schema`); opening them by URL
(:mod:`.backends`).
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from .blobs import BlobKey, BlobStore
from .chunks import ANY_AGE_MS, ChunkRules
from .feed import Feed, LocalFeed
from .values import (
    TEAM_OWNER,
    Admission,
    Change,
    Conflict,
    KeyringBlob,
    MissingBase,
    MissingChunks,
    PendingRequest,
    Quota,
    QuotaExceeded,
    ScrubReport,
    StaleSeq,
    StorageError,
    StoredHead,
    delta_base,
    manifests_to_drop,
)

__all__ = [
    "ANY_AGE_MS",
    "TEAM_OWNER",
    "Admission",
    "BlobKey",
    "Change",
    "Conflict",
    "KeyringBlob",
    "MissingBase",
    "MissingChunks",
    "PendingRequest",
    "Quota",
    "QuotaExceeded",
    "Runner",
    "ScrubReport",
    "StaleSeq",
    "Storage",
    "StorageError",
    "StoredHead",
    "TeamWrite",
    "delta_base",
    "manifests_to_drop",
]


class Runner(Protocol):
    """What a committer thread needs of a backend that commits writes together: the
    calls of one batch in, each one's (result, exception) out, in order."""

    def __call__(
        self, jobs: Sequence[Callable[[], Any]], /
    ) -> list[tuple[Any, BaseException | None]]: ...


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
    def heads_of(self, slots: Iterable[tuple[str, str]]) -> list[StoredHead]:
        """The newest manifest of each (project, writer) slot named (those that have one):
        what a manifest's verification needs, read without reading every slot's."""

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
        self,
        head: StoredHead,
        data: bytes,
        chunk_ids: Sequence[str],
        keep: int,
        now_ms: int,
        base: tuple[int, str] | None = None,
    ) -> None:
        """Store a verified manifest naming ``chunk_ids`` if ``head.seq`` is above the
        slot's newest (else :class:`StaleSeq`) and the slot holds every chunk (else
        :class:`MissingChunks`); keep the ``keep`` newest of the slot.  A delta names its
        ``base`` (seq, hash): the slot must hold that manifest (else :class:`MissingBase`),
        and keeps it besides the ``keep`` newest."""

    @abc.abstractmethod
    def drop_writer(self, writer: str, pins: Mapping[str, int]) -> int:
        """A revoked writer: delete its manifests except, per project, the pinned seq
        in ``pins``; count them.  Its chunks no kept manifest names become unreferenced
        (:meth:`Storage.drop_unreferenced` removes them after the commit)."""


class Storage(ChunkRules):
    """The hub's persistence; see the module docstring.  The chunk methods (blob and
    row in order) come from :class:`~sealmem.hub.storage.chunks.ChunkRules`."""

    #: Metadata reads and nonce inserts are local and never wait for a lock held across
    #: a durable commit, an fsync or the network (an embedded database): a request that
    #: only reads metadata may be served on the event loop, without a threadpool hop.
    #: False for a backend that talks to a server (PostgreSQL, S3).
    local_reads: bool = False

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
    def push(self, team: str) -> contextlib.AbstractContextManager[TeamWrite]:
        """:meth:`write` for a manifest: a write that only adds to one writer's slot and
        changes nothing other writes verify against (not the team's generation).  A
        backend may commit several of these together (SQLite: group commit); each
        still returns only once its own work is durable, and fails alone."""

    def batch_runner(self) -> Runner | None:
        """A runner for writes that share one durable commit, run by one thread in turn
        (the HTTP runtime's committer): the chunk and manifest PUTs.  Each
        write runs alone as far as it can tell (a refusal rolls back only its own
        work) and is answered once the batch's commit is durable.  None: the backend
        has no such runner (its writes take worker threads)."""
        return None

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

    # -- usage (usage and member_usage: see ChunkRules) --------------------------------

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
