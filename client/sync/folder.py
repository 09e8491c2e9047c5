"""A shared folder as a transport (DESIGN §6).

Layout under ``{root}/sealmem/{team}/``::

    roster/{version:010d}.json
    keyrings/{project}/{epoch:010d}.json
    snapshots/{project}/{writer}/manifest-{seq:012d}.json
    snapshots/{project}/{writer}/chunks/{chunk_id}
    requests/{kid}.json

The folder is untrusted: anyone with write access can drop or delete files,
nobody can forge them. Names read back from the folder are checked against
strict patterns and anything else is ignored, so a planted ``../`` or a stray
file cannot steer a path. No symbolic link below ``{root}`` is followed
(``nofollow.py``): one in a read path is skipped with a warning, one in a write
or delete path refuses the operation, so nothing outside the folder is
written or deleted. ``{root}`` itself is the user's choice and may be a link.
Every write is atomic (temp file, fsync, rename), and
a push writes its chunks before the manifest that names them, so a reader never
sees a manifest whose chunks are not there yet, even after a crash mid-push.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from ...protocol.errors import InputError, TransportError
from ...protocol.manifest import MAX_CHUNK_BYTES
from ...protocol.verify import MAX_KEYRING_BYTES, MAX_MANIFEST_BYTES, MAX_ROSTER_BYTES
from .nofollow import SafeDir, Symlinked
from .transport import Transport

__all__ = ["MANIFESTS_KEPT", "FolderTransport"]

#: Manifests kept per writer: readers that are a little behind still find the
#: chunks of the manifest they last saw while they move on.
MANIFESTS_KEPT = 3

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_CHUNK = re.compile(r"^[0-9a-f]{64}$")
_ROSTER = re.compile(r"^(\d{10})\.json$")
_KEYRING = re.compile(r"^(\d{10})\.json$")
_MANIFEST = re.compile(r"^manifest-(\d{12})\.json$")
_REQUEST = re.compile(r"^([a-z2-7]{26})\.json$")
_MAX_REQUEST_BYTES = 16 * 1024


def _name(value: str, what: str) -> str:
    if not _NAME.match(value) or value in {".", ".."}:
        raise InputError(f"{what} {value!r} cannot name a folder entry")
    return value


class FolderTransport(Transport):
    kind = "folder"

    def __init__(self, root: str | os.PathLike[str], team: str) -> None:
        self._root = Path(root)
        self._team = _name(team, "team id")
        if not self._root.is_dir():
            raise TransportError(
                f"the shared folder {self._root} does not exist or is not a directory; "
                "mount it there (or, if it moved, fix 'location' in team.json)"
            )
        self._base = self._root / "sealmem" / self._team
        self._notes: list[str] = []

    @property
    def location(self) -> str:
        return str(self._root)

    @property
    def base(self) -> Path:
        return self._base

    # -- helpers ---------------------------------------------------------------

    def take_warnings(self) -> list[str]:
        notes, self._notes = list(dict.fromkeys(self._notes)), []
        return notes

    def _team_dir(self) -> SafeDir:
        """The team's directory, which only 'team create' makes.

        An unmounted share usually leaves an empty mount point behind; writing there
        would put the team's files on the local disk and show an empty team.
        """
        found = SafeDir.open(self._root, ("sealmem", self._team))
        if found is None:
            raise TransportError(
                f"the team folder {self._base} is missing: is the shared folder mounted at "
                f"{self._root}? (only 'sealmem team create' makes it)"
            )
        return found

    def prepare_new_team(self) -> None:
        """Make the team's directory (``team create``; every other write needs it to exist)."""
        self._open(("sealmem", self._team)).close()

    def _open(self, parts: tuple[str, ...]) -> SafeDir:
        found = SafeDir.open(self._root, parts, create=True)
        if found is None:  # open(create=True) makes every part or raises
            raise TransportError(f"cannot create {self._root.joinpath(*parts)}")
        return found

    def _dir(self, *parts: str) -> SafeDir:
        """``base/parts``, made if missing, for writing: a link on the way is refused."""
        self._team_dir().close()
        return self._open(("sealmem", self._team, *parts))

    @contextlib.contextmanager
    def _reading(self, *parts: str) -> Iterator[SafeDir | None]:
        """``base/parts`` for reading, or None when it is missing.

        A link on the way is not followed: what lies behind it is skipped with a
        warning (:meth:`take_warnings`) and the rest of the sync goes on.
        """
        found: SafeDir | None = None
        try:
            found = SafeDir.open(self._root, ("sealmem", self._team, *parts))
        except Symlinked as exc:
            self._notes.append(f"skipped {exc}")
        try:
            yield found
        finally:
            if found is not None:
                found.close()

    @staticmethod
    def _listing(directory: SafeDir | None, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
        if directory is None:
            return []
        found = []
        for name in directory.names():
            match = pattern.match(name)
            if match:
                found.append((int(match.group(1)), name))
        return sorted(found)

    def _manifests(self, project: str, writer: str, keep: int) -> list[bytes]:
        """A writer's newest ``keep`` manifests that are files, newest first."""
        with self._reading("snapshots", project, writer) as writer_dir:
            found = self._listing(writer_dir, _MANIFEST)[-keep:]
            return [
                d
                for _, name in reversed(found)
                if writer_dir and (d := writer_dir.read(name, MAX_MANIFEST_BYTES))
            ]

    def _writers(self, project: str) -> list[str]:
        """Member ids with a directory under ``snapshots/{project}`` (anything else ignored)."""
        with self._reading("snapshots", _name(project, "project")) as project_dir:
            names = project_dir.names() if project_dir is not None else []
        return sorted(w for w in names if _REQUEST.match(w + ".json"))

    # -- rosters and keyrings ----------------------------------------------------

    def rosters(self, after_version: int) -> list[bytes]:
        self._team_dir().close()
        out = []
        with self._reading("roster") as directory:
            for version, name in self._listing(directory, _ROSTER):
                if (
                    version > after_version
                    and directory
                    and (data := directory.read(name, MAX_ROSTER_BYTES)) is not None
                ):
                    out.append(data)
        return out

    def put_roster(self, version: int, data: bytes) -> None:
        with self._dir("roster") as directory:
            created = directory.write(f"{version:010d}.json", data, exclusive=True)
        if not created:
            raise TransportError(
                f"roster version {version} already exists in {self.location}; "
                "sync to pick it up, then make the change again"
            )

    def keyrings(self, project: str) -> list[bytes]:
        with self._reading("keyrings", _name(project, "project")) as directory:
            return [
                d
                for _, name in self._listing(directory, _KEYRING)
                if directory and (d := directory.read(name, MAX_KEYRING_BYTES))
            ]

    def put_keyring(self, project: str, epoch: int, data: bytes) -> None:
        with self._dir("keyrings", _name(project, "project")) as directory:
            directory.write(f"{epoch:010d}.json", data)

    # -- snapshots ---------------------------------------------------------------

    def manifests(self, project: str) -> dict[str, list[bytes]]:
        out: dict[str, list[bytes]] = {}
        for writer in self._writers(project):
            if newest := self._manifests(project, writer, MANIFESTS_KEPT):
                out[writer] = newest
        return out

    def newest_seqs(self, project: str) -> dict[str, int] | None:
        out: dict[str, int] = {}
        for writer in self._writers(project):
            with self._reading("snapshots", project, writer) as writer_dir:
                found = self._listing(writer_dir, _MANIFEST)
            if found:
                out[writer] = found[-1][0]
        return out

    def writer_manifests(self, project: str, writer: str) -> list[bytes]:
        if not _REQUEST.match(writer + ".json"):
            return []
        return self._manifests(_name(project, "project"), writer, MANIFESTS_KEPT)

    def newest_manifest(self, project: str, writer: str) -> bytes | None:
        if not _REQUEST.match(writer + ".json"):
            return None
        with self._reading("snapshots", _name(project, "project"), writer) as writer_dir:
            found = self._listing(writer_dir, _MANIFEST)
            if not found or writer_dir is None:
                return None
            return writer_dir.read(found[-1][1], MAX_MANIFEST_BYTES)

    def chunk(self, project: str, writer: str, chunk_id: str) -> bytes | None:
        if not _CHUNK.match(chunk_id):
            return None
        parts = ("snapshots", _name(project, "project"), _name(writer, "writer"), "chunks")
        with self._reading(*parts) as chunk_dir:
            return chunk_dir.read(chunk_id, MAX_CHUNK_BYTES) if chunk_dir else None

    def push(
        self, project: str, writer: str, seq: int, manifest: bytes, chunks: Mapping[str, bytes]
    ) -> None:
        with self._dir("snapshots", _name(project, "project"), _name(writer, "writer")) as wdir:
            with self._open(
                ("sealmem", self._team, "snapshots", project, writer, "chunks")
            ) as chunk_dir:
                for chunk_id, data in chunks.items():
                    if not _CHUNK.match(chunk_id):
                        raise InputError(f"chunk id {chunk_id!r} is not a 64-digit hex hash")
                    if not chunk_dir.is_file(chunk_id):
                        chunk_dir.write(chunk_id, data)
            wdir.write(f"manifest-{seq:012d}.json", manifest)
            for _, old in self._listing(wdir, _MANIFEST)[:-MANIFESTS_KEPT]:
                wdir.unlink(old)

    def collect(self, project: str, writer: str, keep: set[str], grace_ms: int) -> int:
        parts = ("snapshots", _name(project, "project"), _name(writer, "writer"), "chunks")
        # A delete: a link on the way is refused (Symlinked), never skipped or followed.
        chunk_dir = SafeDir.open(self._root, ("sealmem", self._team, *parts))
        if chunk_dir is None:
            return 0
        cutoff = time.time() - grace_ms / 1000
        removed = 0
        with chunk_dir:
            for name in chunk_dir.names():
                if name in keep or not _CHUNK.match(name):
                    continue
                # Anyone may drop files here: a dangling link, a directory or a chunk another
                # process removed first is skipped, never the end of the sync.
                with contextlib.suppress(TransportError):
                    found = chunk_dir.lstat(name)
                    if (
                        found is not None
                        and found.st_mtime < cutoff
                        and not stat.S_ISDIR(found.st_mode)
                    ):
                        chunk_dir.unlink(name)
                        removed += 1
        return removed

    # -- join requests -------------------------------------------------------------

    def post_request(self, kid: str, data: bytes) -> None:
        if not _REQUEST.match(kid + ".json"):
            raise InputError(f"{kid!r} is not a member id")
        with self._dir("requests") as directory:
            directory.write(f"{kid}.json", data)

    def requests(self) -> dict[str, bytes]:
        out = {}
        with self._reading("requests") as directory:
            names = directory.names() if directory is not None else []
            for name in sorted(names):
                match = _REQUEST.match(name)
                if (
                    match
                    and directory
                    and (data := directory.read(name, _MAX_REQUEST_BYTES)) is not None
                ):
                    out[match.group(1)] = data
        return out

    def remove_request(self, kid: str) -> None:
        if not _REQUEST.match(kid + ".json"):
            return
        with self._dir("requests") as directory:
            directory.unlink(f"{kid}.json")
