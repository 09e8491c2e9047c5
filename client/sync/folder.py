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
file cannot steer a path. Every write is atomic (temp file, fsync, rename), and
a push writes its chunks before the manifest that names them, so a reader never
sees a manifest whose chunks are not there yet, even after a crash mid-push.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from ...protocol.errors import InputError, TransportError
from ...protocol.manifest import MAX_CHUNK_BYTES
from ...protocol.verify import MAX_KEYRING_BYTES, MAX_MANIFEST_BYTES, MAX_ROSTER_BYTES
from ..clock import now_ms
from ..fsutil import atomic_write, ensure_dir
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

    @property
    def location(self) -> str:
        return str(self._root)

    @property
    def base(self) -> Path:
        return self._base

    # -- helpers ---------------------------------------------------------------

    def _team_dir(self) -> Path:
        """The team's directory, which only 'team create' makes.

        An unmounted share usually leaves an empty mount point behind; writing there
        would put the team's files on the local disk and show an empty team.
        """
        if not self._base.is_dir():
            raise TransportError(
                f"the team folder {self._base} is missing: is the shared folder mounted at "
                f"{self._root}? (only 'sealmem team create' makes it)"
            )
        return self._base

    def prepare_new_team(self) -> None:
        """Make the team's directory (``team create``; every other write needs it to exist)."""
        try:
            ensure_dir(self._base, 0o755)
        except OSError as exc:
            raise TransportError(f"cannot create {self._base}: {exc}") from exc

    def _dir(self, *parts: str) -> Path:
        self._team_dir()
        try:
            return ensure_dir(self._base.joinpath(*parts), 0o755)
        except OSError as exc:
            raise TransportError(f"cannot create {self._base.joinpath(*parts)}: {exc}") from exc

    def _write(self, path: Path, data: bytes, *, exclusive: bool = False) -> bool:
        try:
            return atomic_write(path, data, mode=0o644, exclusive=exclusive)
        except OSError as exc:
            raise TransportError(f"cannot write {path}: {exc}") from exc

    @staticmethod
    def _read(path: Path, limit: int) -> bytes | None:
        """At most ``limit + 1`` bytes of a regular file (None if missing or not a file).

        The folder is untrusted: a planted huge file, FIFO, device or directory must
        neither exhaust memory nor block the sync.  One byte over the limit is enough
        for the verifier to refuse the object as too large, by name.
        """
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            raise TransportError(f"cannot read {path}: {exc}") from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            chunks: list[bytes] = []
            left = limit + 1
            while left > 0:
                block = os.read(fd, min(left, 1 << 20))
                if not block:
                    break
                chunks.append(block)
                left -= len(block)
            return b"".join(chunks)
        except OSError as exc:
            raise TransportError(f"cannot read {path}: {exc}") from exc
        finally:
            os.close(fd)

    def _listing(self, directory: Path, pattern: re.Pattern[str]) -> list[tuple[int, Path]]:
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise TransportError(f"cannot list {directory}: {exc}") from exc
        found = []
        for name in names:
            match = pattern.match(name)
            if match:
                found.append((int(match.group(1)), directory / name))
        return sorted(found)

    # -- rosters and keyrings ----------------------------------------------------

    def rosters(self, after_version: int) -> list[bytes]:
        out = []
        for version, path in self._listing(self._team_dir() / "roster", _ROSTER):
            if version > after_version and (data := self._read(path, MAX_ROSTER_BYTES)) is not None:
                out.append(data)
        return out

    def put_roster(self, version: int, data: bytes) -> None:
        path = self._dir("roster") / f"{version:010d}.json"
        if not self._write(path, data, exclusive=True):
            raise TransportError(
                f"roster version {version} already exists in {self.location}; "
                "sync to pick it up, then make the change again"
            )

    def keyrings(self, project: str) -> list[bytes]:
        directory = self._base / "keyrings" / _name(project, "project")
        return [
            d
            for _, p in self._listing(directory, _KEYRING)
            if (d := self._read(p, MAX_KEYRING_BYTES))
        ]

    def put_keyring(self, project: str, epoch: int, data: bytes) -> None:
        path = self._dir("keyrings", _name(project, "project")) / f"{epoch:010d}.json"
        self._write(path, data)

    # -- snapshots ---------------------------------------------------------------

    def manifests(self, project: str) -> dict[str, list[bytes]]:
        project_dir = self._base / "snapshots" / _name(project, "project")
        try:
            writers = sorted(os.listdir(project_dir))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise TransportError(f"cannot list {project_dir}: {exc}") from exc
        out: dict[str, list[bytes]] = {}
        for writer in writers:
            if not _REQUEST.match(writer + ".json"):
                continue  # not a member id: planted or stray, ignored
            found = self._listing(project_dir / writer, _MANIFEST)
            newest = [
                d
                for _, p in reversed(found[-MANIFESTS_KEPT:])
                if (d := self._read(p, MAX_MANIFEST_BYTES))
            ]
            if newest:
                out[writer] = newest
        return out

    def newest_seqs(self, project: str) -> dict[str, int] | None:
        project_dir = self._base / "snapshots" / _name(project, "project")
        try:
            writers = sorted(os.listdir(project_dir))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise TransportError(f"cannot list {project_dir}: {exc}") from exc
        out: dict[str, int] = {}
        for writer in writers:
            if _REQUEST.match(writer + ".json"):
                found = self._listing(project_dir / writer, _MANIFEST)
                if found:
                    out[writer] = found[-1][0]
        return out

    def writer_manifests(self, project: str, writer: str) -> list[bytes]:
        if not _REQUEST.match(writer + ".json"):
            return []
        writer_dir = self._base / "snapshots" / _name(project, "project") / writer
        found = self._listing(writer_dir, _MANIFEST)
        return [
            d
            for _, p in reversed(found[-MANIFESTS_KEPT:])
            if (d := self._read(p, MAX_MANIFEST_BYTES))
        ]

    def newest_manifest(self, project: str, writer: str) -> bytes | None:
        if not _REQUEST.match(writer + ".json"):
            return None
        writer_dir = self._base / "snapshots" / _name(project, "project") / writer
        found = self._listing(writer_dir, _MANIFEST)
        return self._read(found[-1][1], MAX_MANIFEST_BYTES) if found else None

    def chunk(self, project: str, writer: str, chunk_id: str) -> bytes | None:
        if not _CHUNK.match(chunk_id):
            return None
        path = self._base / "snapshots" / _name(project, "project") / _name(writer, "writer")
        return self._read(path / "chunks" / chunk_id, MAX_CHUNK_BYTES)

    def push(
        self, project: str, writer: str, seq: int, manifest: bytes, chunks: Mapping[str, bytes]
    ) -> None:
        chunk_dir = self._dir("snapshots", _name(project, "project"), _name(writer, "writer"))
        chunk_dir = ensure_dir(chunk_dir / "chunks", 0o755)
        for chunk_id, data in chunks.items():
            if not _CHUNK.match(chunk_id):
                raise InputError(f"chunk id {chunk_id!r} is not a 64-digit hex hash")
            path = chunk_dir / chunk_id
            if not path.exists():
                self._write(path, data)
        writer_dir = chunk_dir.parent
        self._write(writer_dir / f"manifest-{seq:012d}.json", manifest)
        for _, old in self._listing(writer_dir, _MANIFEST)[:-MANIFESTS_KEPT]:
            old.unlink(missing_ok=True)

    def collect(self, project: str, writer: str, keep: set[str], grace_ms: int) -> int:
        writer_dir = self._base / "snapshots" / _name(project, "project") / _name(writer, "writer")
        chunk_dir = writer_dir / "chunks"
        try:
            entries = list(os.scandir(chunk_dir))
        except FileNotFoundError:
            return 0
        cutoff = (now_ms() - grace_ms) / 1000  # compared with file mtimes (s)
        removed = 0
        for entry in entries:
            if entry.name in keep or not _CHUNK.match(entry.name):
                continue
            # Anyone may drop files here: a dangling link, a directory or a chunk another
            # process removed first is skipped, never the end of the sync.
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
        return removed

    # -- join requests -------------------------------------------------------------

    def post_request(self, kid: str, data: bytes) -> None:
        if not _REQUEST.match(kid + ".json"):
            raise InputError(f"{kid!r} is not a member id")
        self._write(self._dir("requests") / f"{kid}.json", data)

    def requests(self) -> dict[str, bytes]:
        directory = self._base / "requests"
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return {}
        out = {}
        for name in sorted(names):
            match = _REQUEST.match(name)
            if match and (data := self._read(directory / name, _MAX_REQUEST_BYTES)) is not None:
                out[match.group(1)] = data
        return out

    def remove_request(self, kid: str) -> None:
        if _REQUEST.match(kid + ".json"):
            (self._base / "requests" / f"{kid}.json").unlink(missing_ok=True)
