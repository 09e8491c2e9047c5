"""Where the hub keeps a team's objects: an interface and its value types.

The embedded default is :class:`sealmem.hub.sqlite_storage.SQLiteStorage`
(SQLite metadata + a blob directory).  A PostgreSQL + S3-compatible backend
implements the same methods: small signed objects (rosters, keyrings,
manifests, join requests) and the change feed are rows; chunks are blobs,
written durably *before* the metadata row that names them commits, so a crash
leaves at worst an orphan blob (collected by :meth:`Storage.collect_orphans`),
never a row without its blob.

Every method is blocking and thread-safe; the app calls them from a thread
pool.  Ids passed in are already validated by the app.  Storage never checks
signatures or grants: that is :mod:`sealmem.hub.teams`.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..protocol.errors import SealmemError

__all__ = [
    "Admission",
    "Change",
    "KeyringBlob",
    "PendingRequest",
    "StaleSeq",
    "Storage",
    "StorageError",
    "StoredHead",
]


class StorageError(SealmemError):
    """The hub's storage failed (disk full, corrupt database, ...)."""


class StaleSeq(SealmemError):
    """Compare-and-swap lost: the slot already holds this seq or a newer one."""

    def __init__(self, current: int) -> None:
        super().__init__(f"the slot already holds seq {current}")
        self.current = current


@dataclass(frozen=True, slots=True)
class StoredHead:
    """The newest manifest of one (writer, project) as the hub accepted it."""

    project: str
    writer: str
    seq: int
    hash: str
    reset_at: int


@dataclass(frozen=True, slots=True)
class KeyringBlob:
    project: str
    epoch: int
    data: bytes


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A join request in a team's inbox, and when it was posted (hub clock, ms)."""

    kid: str
    data: bytes
    posted_at: int


@dataclass(frozen=True, slots=True)
class Admission:
    """What a team's inbox held when a join request was offered to it.

    ``stored`` False: the inbox (``pending`` live requests) or this address's
    share of it (``from_address``) was full, and nothing changed.
    """

    stored: bool
    pending: int
    from_address: int
    oldest_at: int | None


@dataclass(frozen=True, slots=True)
class Change:
    """One entry of a team's change feed."""

    cursor: int
    kind: str  # "roster" | "keyring" | "manifest"
    project: str | None
    writer: str | None
    seq: int | None

    def to_wire(self) -> dict[str, object]:
        return {
            "cursor": self.cursor,
            "kind": self.kind,
            "project": self.project,
            "writer": self.writer,
            "seq": self.seq,
        }


class Storage(abc.ABC):
    """The hub's persistence; see the module docstring."""

    @abc.abstractmethod
    def close(self) -> None: ...

    # -- teams, rosters, keyrings ----------------------------------------------------

    @abc.abstractmethod
    def team_exists(self, team: str) -> bool: ...

    @abc.abstractmethod
    def team_count(self) -> int: ...

    @abc.abstractmethod
    def rosters(self, team: str, after_version: int) -> list[bytes]:
        """Roster envelopes above ``after_version``, in version order."""

    @abc.abstractmethod
    def put_roster(
        self,
        team: str,
        version: int,
        data: bytes,
        members: Sequence[tuple[str, bytes]],
        keyrings: Sequence[KeyringBlob],
        now_ms: int,
    ) -> None:
        """Store a verified roster version (creating the team at v1), the (kid,
        sign_public) of its members, and its keyrings, in one transaction."""

    @abc.abstractmethod
    def keyrings(self, team: str, project: str | None = None) -> list[KeyringBlob]:
        """Keyrings of one project (or all), oldest epoch first."""

    @abc.abstractmethod
    def put_keyring(self, team: str, keyring: KeyringBlob, now_ms: int) -> None: ...

    @abc.abstractmethod
    def keys_of(self, kid: str) -> list[tuple[str, bytes]]:
        """(team, sign_public) for every team whose roster lists ``kid``."""

    # -- manifests and chunks --------------------------------------------------------

    @abc.abstractmethod
    def heads(self, team: str) -> list[StoredHead]: ...

    @abc.abstractmethod
    def manifests(
        self, team: str, project: str, writer: str | None = None
    ) -> dict[str, list[bytes]]:
        """Per writer, its kept manifest envelopes, newest first."""

    @abc.abstractmethod
    def newest_seqs(self, team: str, project: str) -> dict[str, int]: ...

    @abc.abstractmethod
    def put_manifest(
        self, team: str, head: StoredHead, data: bytes, keep: int, now_ms: int
    ) -> None:
        """Store a verified manifest if ``head.seq`` is above the slot's newest one
        (else raise :class:`StaleSeq`); keep only the ``keep`` newest."""

    @abc.abstractmethod
    def missing_chunks(
        self, team: str, project: str, writer: str, ids: Iterable[str]
    ) -> list[str]: ...

    @abc.abstractmethod
    def put_chunk(
        self, team: str, project: str, writer: str, chunk_id: str, data: bytes, now_ms: int
    ) -> bool:
        """Store a chunk (blob durable first); False when it was already there."""

    @abc.abstractmethod
    def chunk(self, team: str, project: str, writer: str, chunk_id: str) -> bytes | None: ...

    @abc.abstractmethod
    def collect(
        self, team: str, project: str, writer: str, keep: set[str], older_than_ms: int
    ) -> int:
        """Delete the writer's chunks not in ``keep`` stored before ``older_than_ms``."""

    @abc.abstractmethod
    def collect_orphans(self, min_age_s: float) -> int:
        """Delete blobs no row names (a crash between blob and commit); count them."""

    @abc.abstractmethod
    def usage(self, team: str) -> int:
        """Bytes the team holds (objects and chunks)."""

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
        """Changes with a cursor above ``since``, oldest first."""

    @abc.abstractmethod
    def cursor(self, team: str) -> int:
        """The team's newest cursor (0 before any change)."""
