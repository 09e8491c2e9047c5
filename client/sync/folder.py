"""A shared folder as a transport (DESIGN §6).

Layout under ``{root}/sealmem/{team}/``::

    roster/{version:010d}.json
    keyrings/{project}/{epoch:010d}.json
    snapshots/{project}/{writer}/manifest-{seq:012d}.json
    snapshots/{project}/{writer}/chunks/{chunk_id}
    private/{member}/{device}/{project}/manifest-{seq:012d}.json   (a private chain)
    private/{member}/{device}/{project}/chunks/{chunk_id}
    private/{member}/keyrings/{epoch:010d}.json                    (member keyrings)
    private/{member}/trust/{device}.json                           (trust decisions)
    requests/{kid}.json
    holes/{project}/{writer}/{reader}.json   (hole reports, :mod:`.folder_chunks`)
    checkpoint/{seq:010d}.json

The folder is untrusted: anyone with write access can drop or delete files,
nobody can forge them. Names read back from the folder are checked against
strict patterns and anything else is ignored, so a planted ``../`` or a stray
file cannot steer a path. No symbolic link below ``{root}`` (the user's choice, which
may be one) is followed, and an entry that cannot be used is skipped with a warning
(:mod:`~sealmem.client.sync.folder_dirs`).  Every write is atomic (temp file, fsync,
rename), and a push writes its chunks before the manifest that names them, so a reader
never sees a manifest whose chunks are not there yet, even after a crash mid-push.
A chunk file is reused only when its bytes hash to its name; anyone may have
overwritten it (the writer finds what readers reported or it found damaged,
:mod:`~.folder_chunks`, and publishes those buckets again).

A push is compare-and-swap on ``seq``, as on the hub: two devices of one member
cannot both land the same seq (the manifest file is created exclusively), and a seq
at or below the writer's newest manifest is a :class:`.ConflictError`.  Which files
are the writer's manifests is the protocol's check (``ours``, :func:`.own_manifest`
under the member's key): only a file it accepts, at the seq its name says, counts.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from ...crypto import SUITE
from ...protocol.checkpoint import MAX_CHECKPOINT_BYTES
from ...protocol.encoding import HEX_HASH_RE, KID_RE
from ...protocol.errors import InputError, Rejected, TransportError
from ...protocol.manifest import MAX_CHUNK_BYTES, MAX_MANIFEST_BYTES, peek
from ...protocol.private_trust import MAX_TRUST_BYTES
from ...protocol.snapshot import chunk_id as hash_chunk
from ...protocol.verify import MAX_KEYRING_BYTES, MAX_ROSTER_BYTES
from ..clock import now_ms
from . import folder_chunks, folder_watch
from .folder_chunks import Verified
from .folder_dirs import TeamDirs
from .folder_watch import NAME as _NAME
from .nofollow import SafeDir, Unusable
from .transport import ConflictError, Transport

__all__ = ["MANIFESTS_KEPT", "FolderTransport", "Ours"]

Ours = Callable[[bytes, str, str, int], bool]
"""``ours(data, project, writer, seq)``: whether ``data`` is ``writer``'s own manifest
``seq`` of ``project``."""

#: Manifests kept per writer: readers that are a little behind still find the
#: chunks of the manifest they last saw while they move on.
MANIFESTS_KEPT = 3


_NUMBERED = re.compile(r"^([0-9]{10})\.json\Z")  # rosters by version, keyrings by epoch
_MANIFEST = re.compile(r"^manifest-([0-9]{12})\.json\Z")
_REQUEST = re.compile(rf"^({KID_RE.pattern})\.json\Z")
_MAX_REQUEST_BYTES = 16 * 1024


def _name(value: str, what: str) -> str:
    if not _NAME.match(value) or value in {".", ".."}:
        raise InputError(f"{what} {value!r} cannot name a folder entry")
    return value


def _snapshots(project: str, writer: str, *more: str, member: str | None = None) -> tuple[str, ...]:
    """The parts of ``snapshots/{project}/{writer}/{more}`` (of a private chain:
    ``private/{member}/{writer}/{project}/{more}``), the names checked."""
    project, writer = _name(project, "project"), _name(writer, "writer")
    if member is not None:
        return ("private", _name(member, "member"), writer, project, *more)
    return ("snapshots", project, writer, *more)


class FolderTransport(Transport):
    kind = "folder"

    def __init__(self, root: str | os.PathLike[str], team: str, *, ours: Ours) -> None:
        """``ours``: which manifest files a push counts (see the module docstring)."""
        self._ours = ours
        self._root = Path(root)
        if not self._root.is_dir():
            raise TransportError(
                f"the shared folder {self._root} does not exist or is not a directory; "
                "mount it there (or, if it moved, fix 'location' in team.json)"
            )
        self._dirs = TeamDirs(self._root, _name(team, "team id"))
        self._verified = Verified()  # chunk files found intact
        #: the mtime the file server gave our newest manifest, and when we saw it
        self._server_time: tuple[int, float] | None = None
        self._member: str | None = None  # set in a private space's view

    def _chain(self, project: str, writer: str, *more: str) -> tuple[str, ...]:
        return _snapshots(project, writer, *more, member=self._member)

    def private_space(self, member: str) -> FolderTransport:
        """This folder seen as ``member``'s private space: the chain methods (manifests,
        chunks, push) work on its devices' private chains."""
        view = copy.copy(self)
        view._member = _name(member, "member")
        view._verified = Verified()
        return view

    def chain_projects(self, writer: str) -> list[str]:
        """The projects of ``writer``'s private chains in this private space."""
        if self._member is None or not KID_RE.fullmatch(writer):
            return []
        with self._dirs.reading("private", self._member, writer) as wdir:
            return sorted(
                n for n in self._dirs.names(wdir) if _NAME.match(n) and n not in {".", ".."}
            )

    def member_keyrings(self) -> list[bytes]:
        if self._member is None:
            return []
        with self._dirs.reading("private", self._member, "keyrings") as directory:
            return [
                d
                for _, name in self._dirs.listing(directory, _NUMBERED)
                if (d := self._dirs.read(directory, name, MAX_KEYRING_BYTES))
            ]

    def trust(self, writer: str) -> bytes | None:
        if self._member is None or not KID_RE.fullmatch(writer):
            return None
        with self._dirs.reading("private", self._member, "trust") as directory:
            return self._dirs.read(directory, f"{writer}.json", MAX_TRUST_BYTES)

    def put_trust(self, writer: str, data: bytes) -> None:
        if self._member is None:
            raise InputError("trust decisions go into a member's private space")
        with self._dirs.writing("private", self._member, "trust") as directory:
            directory.write(f"{_name(writer, 'writer')}.json", data)

    def put_member_keyring(self, epoch: int, data: bytes, *, new: bool) -> None:
        if self._member is None:
            raise InputError("a member keyring goes into a member's private space")
        with self._dirs.writing("private", self._member, "keyrings") as directory:
            created = directory.write(f"{epoch:010d}.json", data, exclusive=new)
        if not created:
            raise ConflictError(f"member keyring {epoch} already exists in {self.location}")

    @property
    def location(self) -> str:
        return str(self._root)

    @property
    def base(self) -> Path:
        return self._dirs.base

    def take_warnings(self) -> list[str]:
        return self._dirs.take_warnings()

    def prepare_new_team(self) -> None:
        """Make the team's directory (``team create``; every other write needs it to exist)."""
        self._dirs.make().close()

    def _manifests(self, project: str, writer: str) -> list[bytes]:
        """A writer's newest :data:`MANIFESTS_KEPT` manifests that are files, newest first."""
        with self._dirs.reading(*self._chain(project, writer)) as writer_dir:
            found = self._dirs.listing(writer_dir, _MANIFEST)[-MANIFESTS_KEPT:]
            return [
                d
                for _, name in reversed(found)
                if (d := self._dirs.read(writer_dir, name, MAX_MANIFEST_BYTES))
            ]

    def _writers(self, project: str) -> list[str]:
        """Member ids with a directory under ``snapshots/{project}`` (anything else ignored)."""
        with self._dirs.reading("snapshots", _name(project, "project")) as project_dir:
            names = self._dirs.names(project_dir)
        return sorted(w for w in names if KID_RE.fullmatch(w))

    # -- rosters and keyrings ----------------------------------------------------

    def rosters(self, after_version: int) -> list[bytes]:
        self._dirs.team_dir().close()
        with self._dirs.reading("roster") as directory:
            found = [
                self._dirs.read(directory, name, MAX_ROSTER_BYTES)
                for version, name in self._dirs.listing(directory, _NUMBERED)
                if version > after_version
            ]
        return [data for data in found if data is not None]

    def put_roster(self, version: int, data: bytes) -> None:
        with self._dirs.writing("roster") as directory:
            created = directory.write(f"{version:010d}.json", data, exclusive=True)
        if not created:
            raise ConflictError(
                f"roster version {version} already exists in {self.location}; "
                "sync to pick it up, then make the change again"
            )

    def keyrings(self, project: str) -> list[bytes]:
        with self._dirs.reading("keyrings", _name(project, "project")) as directory:
            return [
                d
                for _, name in self._dirs.listing(directory, _NUMBERED)
                if (d := self._dirs.read(directory, name, MAX_KEYRING_BYTES))
            ]

    def put_keyring(self, project: str, epoch: int, data: bytes) -> None:
        with self._dirs.writing("keyrings", _name(project, "project")) as directory:
            directory.write(f"{epoch:010d}.json", data)

    def checkpoint(self) -> bytes | None:
        return self._dirs.checkpoint(MAX_CHECKPOINT_BYTES)

    def put_checkpoint(self, seq: int, data: bytes) -> None:
        self._dirs.put_checkpoint(seq, data)

    # -- snapshots ---------------------------------------------------------------

    def manifests(self, project: str) -> dict[str, list[bytes]]:
        out: dict[str, list[bytes]] = {}
        for writer in self._writers(project):
            if newest := self._manifests(project, writer):
                out[writer] = newest
        return out

    def newest_seqs(self, project: str) -> dict[str, int] | None:
        out: dict[str, int] = {}
        for writer in self._writers(project):
            with self._dirs.reading("snapshots", project, writer) as writer_dir:
                found = self._dirs.listing(writer_dir, _MANIFEST)
            if found:
                out[writer] = found[-1][0]
        return out

    def writer_manifests(self, project: str, writer: str) -> list[bytes]:
        if not KID_RE.fullmatch(writer):
            return []
        return self._manifests(_name(project, "project"), writer)

    def newest_manifest(self, project: str, writer: str) -> bytes | None:
        if not KID_RE.fullmatch(writer):
            return None
        with self._dirs.reading(*self._chain(project, writer)) as writer_dir:
            found = self._dirs.listing(writer_dir, _MANIFEST)
            return self._dirs.read(writer_dir, found[-1][1], MAX_MANIFEST_BYTES) if found else None

    def base_manifests(self, project: str, writer: str, seq: int) -> list[bytes]:
        """The file of manifest ``seq`` (kept by :meth:`_prune` while the newest manifest
        is a delta listed against it)."""
        if not KID_RE.fullmatch(writer):
            return []
        with self._dirs.reading(*self._chain(project, writer)) as writer_dir:
            data = self._dirs.read(writer_dir, f"manifest-{seq:012d}.json", MAX_MANIFEST_BYTES)
        return [] if data is None else [data]

    def chunk(self, project: str, writer: str, chunk_id: str) -> bytes | None:
        if not HEX_HASH_RE.fullmatch(chunk_id):
            return None
        with self._dirs.reading(*self._chain(project, writer, "chunks")) as chunk_dir:
            return self._dirs.read(chunk_dir, chunk_id, MAX_CHUNK_BYTES)

    def _counts(self, data: bytes | None, project: str, writer: str, seq: int) -> bool:
        """Whether a push counts ``data``, found as ``writer``'s manifest ``seq``."""
        return data is not None and self._ours(data, project, writer, seq)

    def _newest_held(self, writer_dir: SafeDir, project: str, writer: str) -> tuple[int, bytes]:
        """The writer's newest manifest that counts in the folder: (seq, bytes), or (0, b"")."""
        for number, name in reversed(self._dirs.listing(writer_dir, _MANIFEST)):
            data = self._dirs.read(writer_dir, name, MAX_MANIFEST_BYTES)
            if data is not None and self._counts(data, project, writer, number):
                return number, data
        return 0, b""

    def _conflict(self, project: str, writer: str, seq: int, held: int) -> ConflictError:
        detail = f"{writer}/{project} already holds seq {held}"
        return ConflictError(
            f"cannot push seq {seq} to {self.location}: {detail} (another device with this "
            "member key, or a restored store); sync again to build on it",
            detail=detail,
        )

    def push(
        self, project: str, writer: str, seq: int, manifest: bytes, chunks: Mapping[str, bytes]
    ) -> None:
        with self._dirs.writing(*self._chain(project, writer)) as wdir:
            held, held_bytes = self._newest_held(wdir, project, writer)
            if held > seq or (held == seq and held_bytes != manifest):
                raise self._conflict(project, writer, seq, held)
            if held == seq:
                return  # this very manifest is already the newest: nothing to do
            with self._dirs.make(*self._chain(project, writer, "chunks")) as chunk_dir:
                for chunk_id, data in chunks.items():
                    if not HEX_HASH_RE.fullmatch(chunk_id):
                        raise InputError(f"chunk id {chunk_id!r} is not a 64-digit hex hash")
                    if not self._intact(chunk_dir, chunk_id):
                        # each file is fsynced; the directory once, before the manifest
                        chunk_dir.write(chunk_id, data, sync_dir=False)
                    # written or found intact: a later check need not read it again
                    with contextlib.suppress(Unusable):
                        if (found := chunk_dir.lstat(chunk_id)) is not None:
                            self._verified.note(project, writer, chunk_id, found)
                if chunks:
                    # even when every chunk was found there: a push stopped after its
                    # renames and before this fsync left entries that may not last, and
                    # the manifest written next must never outlive the chunks it names
                    chunk_dir.sync()
            name = f"manifest-{seq:012d}.json"
            if not wdir.write(name, manifest, exclusive=True):
                # Someone wrote this seq since we looked: another device wins, a planted
                # file that does not look like this writer's manifest is replaced.
                there = self._dirs.read(wdir, name, MAX_MANIFEST_BYTES)
                if there != manifest and self._counts(there, project, writer, seq):
                    raise self._conflict(project, writer, seq, seq)
                if there != manifest:
                    wdir.write(name, manifest)
            self._note_server_time(wdir, name)
            self._prune(wdir, project, writer, seq, _base_seq(manifest))

    def _note_server_time(self, wdir: SafeDir, name: str) -> None:
        """The file server's clock, read from the mtime it gave the file just written."""
        seen = time.monotonic()
        found = wdir.lstat(name)
        if found is not None:
            self._server_time = (found.st_mtime_ns // 1_000_000, seen)

    def reference_time(self) -> tuple[int, float] | None:
        return self._server_time

    def _prune(self, wdir: SafeDir, project: str, writer: str, seq: int, base: int | None) -> None:
        """Keep the newest few manifests up to ``seq``, and the full ones they are listed
        against (``base`` for the new manifest, if a delta); drop files above ``seq`` that
        cannot be this writer's (planted ones would otherwise hide its manifests)."""
        mine = []
        for number, name in self._dirs.listing(wdir, _MANIFEST):
            if number <= seq:
                mine.append(name)
            elif not self._counts(
                self._dirs.read(wdir, name, MAX_MANIFEST_BYTES), project, writer, number
            ):
                with contextlib.suppress(TransportError):
                    wdir.unlink(name)
        if len(mine) <= MANIFESTS_KEPT:
            return
        # the bases of the kept deltas too: an older one is read when the newest is refused,
        # and a revoked writer's pinned manifest may be one of them
        bases = {base} if base is not None else set()
        for name in mine[-MANIFESTS_KEPT:-1]:
            older = _base_seq(self._dirs.read(wdir, name, MAX_MANIFEST_BYTES) or b"")
            if older is not None:
                bases.add(older)
        keep = {f"manifest-{b:012d}.json" for b in bases}
        for old in mine[:-MANIFESTS_KEPT]:
            if old not in keep:
                wdir.unlink(old)

    def _intact(self, chunk_dir: SafeDir, chunk_id: str) -> bool:
        """Whether ``chunk_id`` is a file whose bytes hash to its name (a reusable chunk)."""
        data = self._dirs.read(chunk_dir, chunk_id, MAX_CHUNK_BYTES)
        return data is not None and hash_chunk(SUITE, data) == chunk_id

    def damaged_manifest(self, project: str, writer: str, seq: int, manifest: bytes) -> bool:
        """Whether the file of manifest ``seq`` is gone or not these bytes (one small read)."""
        with self._dirs.reading(*self._chain(project, writer)) as d:
            return self._dirs.read(d, f"manifest-{seq:012d}.json", MAX_MANIFEST_BYTES) != manifest

    def damaged_chunks(self, project: str, writer: str, chunk_ids: Iterable[str]) -> set[str]:
        """Chunks missing, not files, or not hashing to their id (:mod:`.folder_chunks`)."""
        ids, told = list(chunk_ids), folder_chunks.reported(self._dirs, project, writer)
        with self._dirs.reading(*self._chain(project, writer, "chunks")) as chunk_dir:
            if chunk_dir is None:
                return set(ids)
            bad = {c for c in ids if not HEX_HASH_RE.fullmatch(c)}
            ok = [c for c in ids if c not in bad]
            return bad | self._verified.damaged(project, writer, chunk_dir, ok, self._intact, told)

    def report_holes(self, project: str, writer: str, reader: str, ids: Sequence[str]) -> None:
        _snapshots(project, writer)  # the names checked
        if self._member is not None:
            return  # a private chain's readers are the writer's siblings: no reports
        folder_chunks.report(self._dirs, project, writer, reader, ids)

    def collect(self, project: str, writer: str, keep: set[str], grace_ms: int) -> int:
        # A delete: a link on the way is refused (Symlinked), never skipped or followed.
        parts = ("sealmem", self._dirs.team, *self._chain(project, writer, "chunks"))
        chunk_dir = SafeDir.open(self._root, parts)
        if chunk_dir is None:
            return 0
        cutoff = (now_ms() - grace_ms) / 1000  # compared with file mtimes (s)
        removed = 0
        with chunk_dir:
            for name in self._dirs.names(chunk_dir):
                if name in keep or not HEX_HASH_RE.fullmatch(name):
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
        if not KID_RE.fullmatch(kid):
            raise InputError(f"{kid!r} is not a member id")
        with self._dirs.writing("requests") as directory:
            directory.write(f"{kid}.json", data)

    def requests(self) -> dict[str, bytes]:
        out = {}
        with self._dirs.reading("requests") as directory:
            for name in sorted(self._dirs.names(directory)):
                match = _REQUEST.match(name)
                data = self._dirs.read(directory, name, _MAX_REQUEST_BYTES) if match else None
                if match and data is not None:
                    out[match.group(1)] = data
        return out

    def remove_request(self, kid: str) -> None:
        if not KID_RE.fullmatch(kid):
            return
        with self._dirs.writing("requests") as directory:
            directory.unlink(f"{kid}.json")

    # -- changes (for sync --watch) ------------------------------------------------------

    def wait_for_change(
        self,
        since: str | None,
        timeout_s: float,
        *,
        ignore_writer: str | None = None,
        stop: threading.Event | None = None,
    ) -> tuple[str, bool]:
        """Watch the folder (:func:`~sealmem.client.sync.folder_watch.wait_for_change`)."""
        return folder_watch.wait_for_change(
            self._dirs.base, since, timeout_s, ignore_writer=ignore_writer, stop=stop
        )


def _base_seq(manifest: bytes) -> int | None:
    """The seq of the full manifest that ``manifest`` (ours, or one kept in the folder) is
    listed against; None for a full manifest or bytes that are not a manifest."""
    try:
        m = peek(manifest)
    except Rejected:
        return None
    return None if m.delta is None else m.delta.base_seq
