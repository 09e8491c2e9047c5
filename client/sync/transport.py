"""The small interface the sync engine talks to, and nothing more.

A transport moves opaque, signed bytes; it never decides whether they are
valid (the folder's compare-and-swap counts the manifests that the check its
opener passes accepts). Everything it returns is untrusted and goes through
``sealmem.protocol`` verification before use. Two implementations share it:
:class:`sealmem.client.sync.folder.FolderTransport` (a shared directory) and the
hub client; tests add an in-memory one and a malicious one.

Errors belong to the interface, as in httpx: every implementation raises
:class:`TransportError` (the root, from :mod:`sealmem.protocol.errors`) when it
cannot do its job, :class:`Unreachable` when it cannot reach the team at all
(the folder is not mounted, the hub does not answer: the sync stops; any other
failure to fetch one object skips that object only), and :class:`ConflictError`
when a push or a publication loses a compare-and-swap (the transport already
holds a newer or different object there: read it back, then retry).

Objects:

- rosters: one signed roster envelope per version, a chain;
- keyrings: one signed keyring envelope per (project, epoch);
- manifests: the newest signed manifests per (project, writer), and the full manifest
  the newest one is listed against when it is a delta;
- chunks: encrypted, content-addressed buckets of a writer's snapshot;
- requests: join requests waiting for an admin;
- the checkpoint: the newest admin-signed statement of the team's state (freshness).
"""

from __future__ import annotations

import abc
import contextlib
import threading
from collections.abc import Iterable, Mapping, Sequence

from ...protocol.errors import InputError, TransportError

__all__ = [
    "ConflictError",
    "MissingChunks",
    "Transport",
    "TransportError",
    "Unreachable",
]


class Unreachable(TransportError):
    """The team's folder or hub cannot be reached at all: nothing can be read or written."""


class ConflictError(TransportError):
    """A compare-and-swap was lost: the transport holds a newer or different object there.

    A push whose ``seq`` is not above the writer's newest, or a roster version
    that exists already.  ``detail`` says what is there; pull, then retry.
    """

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = message if detail is None else detail


class MissingChunks(TransportError):
    """A manifest was refused because the transport does not hold chunks it names
    (``ids``: those it listed, at most ``hubapi.MAX_MISSING_LISTED``): the writer encrypts
    those buckets again and publishes at once (SPEC "Self-repair")."""

    def __init__(self, message: str, ids: frozenset[str]) -> None:
        super().__init__(message)
        self.ids = ids


class Transport(abc.ABC):
    """Where a team's objects live. Subclasses implement every method."""

    #: "folder" or "hub": recorded as provenance of what arrives through it.
    kind: str = "transport"

    @property
    @abc.abstractmethod
    def location(self) -> str:
        """Where it points, for messages (a path or a URL, never a secret)."""

    @abc.abstractmethod
    def rosters(self, after_version: int) -> list[bytes]:
        """Roster envelopes with a version above ``after_version``, in version order."""

    @abc.abstractmethod
    def put_roster(self, version: int, data: bytes) -> None:
        """Publish a roster version (admins only; refuse to overwrite one that exists)."""

    @abc.abstractmethod
    def keyrings(self, project: str) -> list[bytes]:
        """Every keyring envelope of ``project``, oldest epoch first."""

    @abc.abstractmethod
    def put_keyring(self, project: str, epoch: int, data: bytes) -> None:
        """Publish the keyring of one project epoch."""

    @abc.abstractmethod
    def manifests(self, project: str) -> dict[str, list[bytes]]:
        """Per writer of ``project``, its newest manifest envelopes, newest first."""

    @abc.abstractmethod
    def chunk(self, project: str, writer: str, chunk_id: str) -> bytes | None:
        """One chunk's bytes, or None when it is missing."""

    @abc.abstractmethod
    def push(
        self, project: str, writer: str, seq: int, manifest: bytes, chunks: Mapping[str, bytes]
    ) -> None:
        """Store new chunks, then the manifest that names them (in that order).

        Compare-and-swap on ``seq``: raise :class:`ConflictError` when the writer's
        newest manifest here has a ``seq`` at or above it (pushing the very manifest
        already held at ``seq`` again is a no-op).
        """

    @abc.abstractmethod
    def collect(self, project: str, writer: str, keep: set[str], grace_ms: int) -> int:
        """Delete this writer's chunks not in ``keep`` and older than ``grace_ms``; count them."""

    @abc.abstractmethod
    def post_request(self, kid: str, data: bytes) -> None:
        """Leave a signed join request for the admins."""

    @abc.abstractmethod
    def requests(self) -> dict[str, bytes]:
        """Pending join requests by member id."""

    @abc.abstractmethod
    def remove_request(self, kid: str) -> None:
        """Drop a handled join request."""

    def checkpoint(self) -> bytes | None:
        """The team's newest checkpoint envelope (admin-signed freshness), or None."""
        return None

    def put_checkpoint(self, seq: int, data: bytes) -> None:
        """Publish checkpoint ``seq`` (admins only); compare-and-swap on ``seq``:
        :class:`ConflictError` when the one held here has a ``seq`` at or above it."""
        raise TransportError(f"{self.location} keeps no team checkpoint")

    def join_status(self, kid: str) -> str | None:
        """The state of ``kid``'s join request where the transport keeps it apart (a hub):
        ``hubapi.REQUEST_PENDING`` (read nothing yet), ``..._UNKNOWN`` (expired, rejected),
        ``..._APPROVED`` or ``..._REVOKED``; None: it cannot tell, read the rosters."""
        return None

    def newest_seqs(self, project: str) -> dict[str, int] | None:
        """Per writer of ``project``, the seq of its newest manifest, if the transport can
        tell without reading them (None: it cannot; callers read :meth:`manifests`)."""
        return None

    def writer_manifests(self, project: str, writer: str) -> list[bytes]:
        """One writer's newest manifest envelopes, newest first."""
        return self.manifests(project).get(writer, [])

    def manifests_above(self, project: str, writer: str, seq: int) -> list[bytes]:
        """One writer's newest manifest envelopes, newest first, when the transport may hold
        one above ``seq``: :meth:`newest_seqs` lists a higher one, or cannot tell; else none
        (a push reads its own back only when one landed above what it recorded)."""
        listed = self.newest_seqs(project)
        if listed is not None and listed.get(writer, 0) <= seq:
            return []
        return self.writer_manifests(project, writer)

    def newest_manifest(self, project: str, writer: str) -> bytes | None:
        """One writer's newest manifest envelope only (readers fall back to
        :meth:`writer_manifests` when it is refused)."""
        found = self.writer_manifests(project, writer)
        return found[0] if found else None

    def base_manifests(self, project: str, writer: str, seq: int) -> list[bytes]:
        """Manifest envelopes that may be ``writer``'s manifest ``seq`` (the base a delta
        manifest is listed against); the caller checks each by its hash.  This default
        offers every manifest of the writer the transport keeps."""
        return self.writer_manifests(project, writer)

    def damaged_chunks(self, project: str, writer: str, chunk_ids: Iterable[str]) -> set[str]:
        """Which of ``writer``'s chunks ``chunk_ids`` are missing here or hold bytes that do
        not hash to their id (the writer then publishes those buckets again): what the
        transport marked as lost (the hub), or what readers reported and the writer's own
        check found (a folder).  This default finds none."""
        return set()

    def report_holes(
        self, project: str, writer: str, reader: str, chunk_ids: Sequence[str]
    ) -> None:
        """Tell ``writer`` which chunks of its accepted manifest ``reader`` could not read
        (none: it read them all).  This default says nothing: a transport that marks what
        it lost itself (the hub) tells the writer without the readers."""
        return None

    def damaged_manifest(self, project: str, writer: str, seq: int, manifest: bytes) -> bool:
        """Whether ``writer``'s manifest ``seq`` is missing here or holds other bytes than
        ``manifest`` (the writer then publishes its snapshot again, as ``seq + 1``).  This
        default finds none: a transport that verifies manifests on upload (the hub) keeps
        no damaged one."""
        return False

    def reference_time(self) -> tuple[int, float] | None:
        """The newest time the transport's own clock told, in ms since the epoch, with
        the ``time.monotonic()`` at which it was seen (the hub's ``Sealmem-Hub-Time``
        answer header; the mtime the folder's file server gave a file this member just
        wrote); None: none seen yet.  :mod:`sealmem.client.sync.clockhealth` compares
        it with the member's clock."""
        return None

    def take_warnings(self) -> list[str]:
        """What the transport skipped since the last call (e.g. a planted link), for people;
        the list is emptied."""
        return []

    def wait_for_change(
        self,
        since: str | None,
        timeout_s: float,
        *,
        ignore_writer: str | None = None,
        stop: threading.Event | None = None,
    ) -> tuple[str, bool]:
        """Block up to ``timeout_s`` (or until ``stop``) for the team's objects to change.

        ``since`` is an opaque cursor this method returned before; None asks for the
        current one without waiting.  Returns ``(cursor, changed)``: pass ``cursor``
        next time; ``changed`` says that something other than ``ignore_writer``'s own
        snapshots changed after ``since``.  This default cannot tell: it waits and
        says nothing changed, and ``sync --watch`` falls back on its interval.
        """
        if since is None:
            return "", False
        (stop or threading.Event()).wait(timeout_s)
        return since, False

    def syncing(self) -> contextlib.AbstractContextManager[None]:
        """Around one sync: a transport that repeats requests counts its time budget from
        the start of it (and no longer once it ended)."""
        return contextlib.nullcontext()

    def prepare_new_team(self) -> None:  # noqa: B027 - optional hook
        """Get ready to hold a team that does not exist yet (before roster v1 is published)."""

    def close(self) -> None:  # noqa: B027 - optional hook, most transports hold nothing open
        """Release what the transport holds."""

    # -- a member's private space (SPEC "Private memories and trust follow the member") --

    def private_space(self, member: str) -> Transport | None:
        """This transport seen as ``member``'s private space (its chain methods work on
        that member's devices' private chains), or None when it holds no private space."""
        del member
        return None

    def chain_projects(self, writer: str) -> list[str]:
        """In a private space: the projects of ``writer``'s private chains."""
        del writer
        return []

    def member_keyrings(self) -> list[bytes]:
        """In a private space: its member's keyrings, every epoch."""
        return []

    def put_member_keyring(self, epoch: int, data: bytes, *, new: bool) -> None:
        """In a private space: publish the member keyring of ``epoch``; ``new``: an epoch
        this device does not trust yet, :class:`ConflictError` when the space holds one
        already (another device made it first); else an update of the trusted one."""
        del data, new
        raise InputError(f"{self.kind} transport holds no private space (epoch {epoch})")

    def trust(self, writer: str) -> bytes | None:
        """In a private space: ``writer``'s trust decisions, or None."""
        del writer
        return None

    def put_trust(self, writer: str, data: bytes) -> None:
        """In a private space: publish (replace) our trust decisions."""
        del writer, data
        raise InputError(f"{self.kind} transport holds no private space")
