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
  (:class:`Storage` in :mod:`.sql`, :class:`TeamWrite` in :mod:`.writes`, the
  chunk rows in :mod:`.chunks`) over a dialect (:mod:`.dialect`).
- **blobs** (:class:`~sealmem.hub.storage.blobs.BlobStore`): chunk ciphertexts.

The ordering rule between the two is kept once, for every backend, in
:mod:`.chunks`: a chunk's blob is durable *before* the row naming it commits,
and a row is deleted *before* its blob.

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
- rosters, keyrings and manifests are compare-and-swapped inside the
  transaction (:class:`Conflict`, :class:`StaleSeq`), a manifest stored only if
  its slot holds its chunks and delta base (:class:`TeamWrite.put_manifest`);
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
never imports the HTTP runtime either.

The room: this seam (what the rest of the hub imports), its values and errors
(:mod:`.values`), the chunk rules (:mod:`.chunks`), wake-ups (:mod:`.feed`); the
blob stores (:mod:`.blobs`, :mod:`.s3`); the SQL metadata layer (:mod:`.sql`,
:mod:`.writes`) over a dialect (:mod:`.dialect`), and its two backends:
:mod:`.sqlite` (over :mod:`.dbfile`, :mod:`.group`, :mod:`.nonces`,
:mod:`.buckets`) and :mod:`.postgres`; both schemas (:mod:`.schema`); opening
them by URL (:mod:`.backends`).
"""

from __future__ import annotations

from .blobs import BlobKey
from .chunks import ANY_AGE_MS
from .sql import Storage
from .values import (
    TEAM_OWNER,
    Admission,
    Change,
    Conflict,
    DiskFull,
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
from .writes import TeamWrite

__all__ = [
    "ANY_AGE_MS",
    "TEAM_OWNER",
    "Admission",
    "BlobKey",
    "Change",
    "Conflict",
    "DiskFull",
    "KeyringBlob",
    "MissingBase",
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
    "delta_base",
    "manifests_to_drop",
]
