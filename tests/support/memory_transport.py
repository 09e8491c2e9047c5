"""An in-memory :class:`Transport` for tests, like httpx's ``MockTransport``.

Dicts instead of files or HTTP, with the same contract as the folder and the
hub: compare-and-swap on ``seq`` (:class:`ConflictError`), a roster version is
written once, and :meth:`MemoryTransport.wait_for_change` wakes on writes by
others.  It is honest and trusting: it stores what it is given, so the engine's
own checks are what a test exercises.  :meth:`MemoryTransport.copy_of` fills one
from another transport (a team made over a folder, then synced in memory).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping

from sealmem.client.sync.transport import ConflictError, Transport
from sealmem.protocol.errors import Rejected
from sealmem.protocol.manifest import peek

__all__ = ["MemoryTransport"]

MANIFESTS_KEPT = 3


def _base_seq(data: bytes) -> int | None:
    try:
        delta = peek(data).delta
    except Rejected:
        return None
    return None if delta is None else delta.base_seq


class MemoryTransport(Transport):
    kind = "memory"

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.roster_log: dict[int, bytes] = {}
        self.keyring_log: dict[tuple[str, int], bytes] = {}
        self.manifest_log: dict[tuple[str, str], dict[int, bytes]] = {}
        self.chunk_log: dict[tuple[str, str, str], tuple[bytes, float]] = {}
        self.request_log: dict[str, bytes] = {}
        self.pushes: list[tuple[str, str, int]] = []  # accepted (project, writer, seq), in order
        self._clock = clock
        self._changes: list[str | None] = []  # the writer of each change (None: not a manifest)
        self._cond = threading.Condition()

    @classmethod
    def copy_of(cls, source: Transport, projects: Iterable[str]) -> MemoryTransport:
        """Everything ``source`` holds for ``projects`` (its newest manifests only, and the
        base of the newest when it is a delta)."""
        copy = cls()
        for version, data in enumerate(source.rosters(0), start=1):
            copy.roster_log[version] = data
        for project in projects:
            for epoch, data in enumerate(source.keyrings(project), start=1):
                copy.keyring_log[(project, epoch)] = data
            for writer, found in source.manifests(project).items():
                base = _base_seq(found[0]) if found else None
                if base is not None:
                    found = [*found, *source.base_manifests(project, writer, base)]
                for data in found:
                    manifest = peek(data)
                    copy.manifest_log.setdefault((project, writer), {})[manifest.seq] = data
                    for ref in manifest.listed:
                        chunk = source.chunk(project, writer, ref.id)
                        if chunk is not None:
                            copy.chunk_log[(project, writer, ref.id)] = (chunk, copy._clock())
        copy.request_log.update(source.requests())
        return copy

    @property
    def location(self) -> str:
        return f"memory:{id(self):x}"

    def _changed(self, writer: str | None = None) -> None:
        with self._cond:
            self._changes.append(writer)
            self._cond.notify_all()

    # -- rosters and keyrings ----------------------------------------------------------

    def rosters(self, after_version: int) -> list[bytes]:
        return [d for v, d in sorted(self.roster_log.items()) if v > after_version]

    def put_roster(self, version: int, data: bytes) -> None:
        if version in self.roster_log:
            raise ConflictError(f"roster version {version} exists already")
        self.roster_log[version] = data
        self._changed()

    def keyrings(self, project: str) -> list[bytes]:
        return [d for (p, _), d in sorted(self.keyring_log.items()) if p == project]

    def put_keyring(self, project: str, epoch: int, data: bytes) -> None:
        self.keyring_log[(project, epoch)] = data
        self._changed()

    # -- snapshots ---------------------------------------------------------------------

    def manifests(self, project: str) -> dict[str, list[bytes]]:
        return {
            w: self.writer_manifests(project, w) for (p, w) in self.manifest_log if p == project
        }

    def writer_manifests(self, project: str, writer: str) -> list[bytes]:
        held = self.manifest_log.get((project, writer), {})
        return [held[s] for s in sorted(held, reverse=True)]

    def newest_seqs(self, project: str) -> dict[str, int]:
        return {w: max(held) for (p, w), held in self.manifest_log.items() if p == project}

    def chunk(self, project: str, writer: str, chunk_id: str) -> bytes | None:
        found = self.chunk_log.get((project, writer, chunk_id))
        return None if found is None else found[0]

    def push(
        self, project: str, writer: str, seq: int, manifest: bytes, chunks: Mapping[str, bytes]
    ) -> None:
        held = self.manifest_log.setdefault((project, writer), {})
        newest = max(held, default=0)
        if newest > seq or (newest == seq and held[seq] != manifest):
            raise ConflictError(
                f"{writer}/{project} already holds seq {newest}; pull, then retry",
                detail=f"{writer}/{project} already holds seq {newest}",
            )
        if newest == seq:
            return
        for chunk_id, data in chunks.items():
            self.chunk_log.setdefault((project, writer, chunk_id), (data, self._clock()))
        held[seq] = manifest
        base = _base_seq(manifest)  # the base of a delta stays while the newest names it
        for old in sorted(held)[:-MANIFESTS_KEPT]:
            if old != base:
                del held[old]
        self.pushes.append((project, writer, seq))
        self._changed(writer)

    def collect(self, project: str, writer: str, keep: set[str], grace_ms: int) -> int:
        cutoff = self._clock() - grace_ms / 1000
        old = [
            key
            for key, (_, stored) in self.chunk_log.items()
            if key[:2] == (project, writer) and key[2] not in keep and stored < cutoff
        ]
        for key in old:
            del self.chunk_log[key]
        return len(old)

    # -- join requests -----------------------------------------------------------------

    def post_request(self, kid: str, data: bytes) -> None:
        self.request_log[kid] = data
        self._changed()

    def requests(self) -> dict[str, bytes]:
        return dict(self.request_log)

    def remove_request(self, kid: str) -> None:
        self.request_log.pop(kid, None)

    # -- changes -----------------------------------------------------------------------

    def wait_for_change(
        self,
        since: str | None,
        timeout_s: float,
        *,
        ignore_writer: str | None = None,
        stop: threading.Event | None = None,
    ) -> tuple[str, bool]:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            if since is None:
                return str(len(self._changes)), False
            seen = int(since)
            while True:
                if any(w is None or w != ignore_writer for w in self._changes[seen:]):
                    return str(len(self._changes)), True
                left = deadline - time.monotonic()
                if left <= 0 or (stop is not None and stop.is_set()):
                    return str(len(self._changes)), False
                self._cond.wait(min(left, 0.1))
