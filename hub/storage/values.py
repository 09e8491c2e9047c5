"""Values and errors of the hub's storage seam (see :mod:`sealmem.hub.storage`)."""

from __future__ import annotations

import dataclasses
import errno
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...protocol.errors import Rejected, SealmemError
from ...protocol.manifest import peek

__all__ = [
    "S3_FULL_CODES",
    "Admission",
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
    "StorageError",
    "StoredHead",
    "delta_base",
    "manifests_to_drop",
    "no_space",
    "storage_failure",
]

#: a team-level object (roster, keyring, join request) in per-member usage
TEAM_OWNER = ""


_DELTA_START = b'{"body":{"base":'


def delta_base(data: bytes) -> int | None:
    """The seq of the manifest a stored delta manifest is listed against (None: a full
    manifest, or bytes that do not parse): a pinned delta keeps its base.

    A stored manifest is canonical JSON, so a delta's body begins with its ``base``
    (keys sorted): anything else is not parsed at all."""
    if not data.startswith(_DELTA_START):
        return None
    try:
        m = peek(data)
    except Rejected:
        return None
    return None if m.delta is None else m.delta.base_seq


def manifests_to_drop(
    newest: Sequence[bytes], older: Sequence[tuple[int, int]], base: tuple[int, str] | None
) -> list[tuple[int, int]]:
    """Which of a slot's manifests go when a new one is stored: the rule both storage
    backends follow.

    ``newest`` holds the bytes of the ``keep - 1`` newest, which stay; ``older`` the
    (seq, size) of the rest, newest first.  Of those, a manifest that the new one
    (``base``: its delta's base, seq and hash) or one of the ``newest`` is listed
    against stays too (a kept delta must keep its base); the others go."""
    bases = {base[0]} if base is not None else set()
    bases.update(seq for data in newest if (seq := delta_base(data)) is not None)
    return [(seq, size) for seq, size in older if seq not in bases]


class StorageError(SealmemError):
    """The hub's storage failed (disk full, corrupt database, unreachable engine, ...)."""


class DiskFull(StorageError):
    """The hub's storage has no space left (its disk, its database's, its bucket's quota):
    the write was not stored; reads still work."""


#: what an S3-compatible store answers when it has no room (MinIO's full drives and
#: bucket quota, Ceph RGW's quota, the WebDAV status some gateways pass on)
S3_FULL_CODES = frozenset(
    {"XMinioStorageFull", "XMinioAdminBucketQuotaExceeded", "QuotaExceeded", "InsufficientStorage"}
)
_SQLITE_FULL = 13  # SQLITE_FULL, the primary result code (an extended code's low byte)
#: SQLITE_IOERR_SHMSIZE: the WAL index (``-shm``) could not be given its size, which on a
#: full disk is what opening a database in WAL mode fails with
_SQLITE_SHMSIZE = 4874
_PG_DISK_FULL = "53100"  # disk_full


def no_space(exc: BaseException) -> bool:
    """Whether an engine's error means "no space left": ENOSPC or EDQUOT from the OS, SQLite's
    ``SQLITE_FULL``, PostgreSQL's ``disk_full`` (53100), an S3 code of :data:`S3_FULL_CODES`."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF == _SQLITE_FULL or code == _SQLITE_SHMSIZE
    if getattr(exc, "sqlstate", None) == _PG_DISK_FULL:
        return True
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        return isinstance(error, dict) and error.get("Code") in S3_FULL_CODES
    return False


def storage_failure(text: str, exc: BaseException) -> StorageError:
    """The :class:`StorageError` for ``exc`` (said in ``text``): a :class:`DiskFull` when it
    means no space left.  The one place that tells a full disk from other failures."""
    if no_space(exc):
        return DiskFull(f"{text} (no space left: free some on the hub's disk, or grow it)")
    return StorageError(text)


class StaleSeq(SealmemError):
    """Compare-and-swap lost: the slot already holds this seq or a newer one."""

    def __init__(self, current: int) -> None:
        super().__init__(f"the slot already holds seq {current}")
        self.current = current


class Conflict(SealmemError):
    """Another writer got there first: the roster version is taken, or the stored
    keyring cites a newer roster (``stale``) or the same one with other bytes."""

    def __init__(self, detail: str, *, stale: bool = False) -> None:
        super().__init__(detail)
        self.stale = stale


class MissingBase(SealmemError):
    """A delta manifest is listed against a manifest the writer's slot does not hold."""

    def __init__(self, seq: int) -> None:
        super().__init__(f"manifest seq {seq}, the base of the delta, is not stored")
        self.seq = seq


class MissingChunks(SealmemError):
    """A manifest names chunks the writer's slot does not hold."""

    def __init__(self, ids: Sequence[str]) -> None:
        super().__init__(f"{len(ids)} chunk(s) are not stored (first {ids[0][:16]})")
        self.ids = list(ids)


class QuotaExceeded(SealmemError):
    """Storing this would pass the team's (or the member's) quota; nothing changed."""

    def __init__(self, team: str, member: str, used: int, incoming: int, limit: int) -> None:
        who = f"team {team}" if member == TEAM_OWNER else f"member {member} of team {team}"
        super().__init__(
            f"{who} holds {used} bytes on this hub; storing {incoming} more would pass "
            f"its limit of {limit}: collect old chunks, or ask the hub operator for more"
        )
        self.used = used
        self.incoming = incoming
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Quota:
    """Space per team, checked inside the transaction that stores.

    Rosters and keyrings (``control`` objects) may use the whole ``team_bytes``;
    everything else (chunks, manifests, join requests) stops ``reserve_bytes``
    short of it, so that a full team can still publish a revocation.  One
    member's chunks and manifests stop at ``member_bytes`` (``None``: no limit of
    its own).
    """

    team_bytes: int = 2**62
    reserve_bytes: int = 0
    member_bytes: int | None = None

    def check(
        self,
        team: str,
        member: str,
        delta: int,
        team_used: Callable[[], int],
        member_used: Callable[[], int],
        *,
        control: bool = False,
    ) -> None:
        """Refuse (:class:`QuotaExceeded`) ``delta`` more bytes for (team, member): the
        one quota rule of every backend.  ``team_used``/``member_used`` read the current
        usage, called only when a limit applies."""
        if delta <= 0:
            return
        limit = self.team_bytes if control else max(self.team_bytes - self.reserve_bytes, 0)
        used = team_used()
        if used + delta > limit:
            raise QuotaExceeded(team, TEAM_OWNER, used, delta, limit)
        if not control and member != TEAM_OWNER and self.member_bytes is not None:
            mine = member_used()
            if mine + delta > self.member_bytes:
                raise QuotaExceeded(team, member, mine, delta, self.member_bytes)


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
    """A verified keyring: compare-and-swapped on (project, epoch, roster_version)."""

    project: str
    epoch: int
    data: bytes
    roster_version: int = 0


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
    """One entry of a team's change feed; ``cursor`` counts per team from 1."""

    cursor: int
    kind: str  # "roster" | "keyring" | "manifest"
    project: str | None
    writer: str | None
    seq: int | None

    def to_wire(self) -> dict[str, object]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class ScrubReport:
    """What a scrub found: blobs checked, and the damaged or missing ones removed."""

    checked: int = 0
    damaged: int = 0
    missing: int = 0
