"""The directories of one team in a shared folder, for :class:`~.folder.FolderTransport`.

Every directory is a :class:`~.nofollow.SafeDir`: no link below the shared folder is
followed.  Reads are lenient: a link on the way, or an entry that cannot be opened or
read (a planted socket, a file nobody may read), is skipped with a warning
(:meth:`TeamDirs.take_warnings`) and the rest of the sync goes on; only an unreachable
team folder stops it (:class:`~.transport.Unreachable`).  Writes and deletes are
strict: a link on the way refuses the operation, so nothing outside the folder is
written or deleted.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from ...protocol.errors import TransportError
from .nofollow import SafeDir, Symlinked, Unusable
from .transport import ConflictError, Unreachable

__all__ = ["CHECKPOINTS_KEPT", "TeamDirs"]

_CHECKPOINT = re.compile(r"^([0-9]{10})\.json\Z")
#: checkpoint files kept (older ones are deleted by the admin that writes a new one)
CHECKPOINTS_KEPT = 3


class TeamDirs:
    """``{root}/sealmem/{team}`` and what lies below it."""

    def __init__(self, root: Path, team: str) -> None:
        self.root, self.team = root, team
        self.base = root / "sealmem" / team
        self._notes: list[str] = []

    def take_warnings(self) -> list[str]:
        notes, self._notes = list(dict.fromkeys(self._notes)), []
        return notes

    def team_dir(self) -> SafeDir:
        """The team's directory, which only 'team create' makes.

        An unmounted share usually leaves an empty mount point behind; writing there
        would put the team's files on the local disk and show an empty team.
        """
        try:
            found = SafeDir.open(self.root, ("sealmem", self.team))
        except Unusable as exc:
            raise Unreachable(f"cannot open the team folder: {exc}") from exc
        if found is None:
            raise Unreachable(
                f"the team folder {self.base} is missing: is the shared folder mounted at "
                f"{self.root}? (only 'sealmem team create' makes it)"
            )
        return found

    def make(self, *parts: str) -> SafeDir:
        """``root/sealmem/team/parts``, made if missing (the team's directory too)."""
        found = SafeDir.open(self.root, ("sealmem", self.team, *parts), create=True)
        if found is None:  # open(create=True) makes every part or raises
            raise TransportError(f"cannot create {self.base.joinpath(*parts)}")
        return found

    def writing(self, *parts: str) -> SafeDir:
        """``base/parts``, made if missing, for writing: a link on the way is refused."""
        self.team_dir().close()
        return self.make(*parts)

    @contextlib.contextmanager
    def reading(self, *parts: str) -> Iterator[SafeDir | None]:
        """``base/parts`` for reading, or None when it is missing or skipped (warned)."""
        found: SafeDir | None = None
        try:
            found = SafeDir.open(self.root, ("sealmem", self.team, *parts))
        except (Symlinked, Unusable) as exc:
            self._notes.append(f"skipped {exc}")
        try:
            yield found
        finally:
            if found is not None:
                found.close()

    def names(self, directory: SafeDir | None) -> list[str]:
        """The entries of ``directory`` (none, with a warning, when it cannot be listed)."""
        if directory is None:
            return []
        try:
            return directory.names()
        except Unusable as exc:
            self._notes.append(f"skipped {exc}")
            return []

    def read(self, directory: SafeDir | None, name: str, limit: int) -> bytes | None:
        """``directory.read``; an entry that cannot be opened or read is no file (warned)."""
        if directory is None:
            return None
        try:
            return directory.read(name, limit)
        except Unusable as exc:
            self._notes.append(f"skipped {exc}")
            return None

    def listing(self, directory: SafeDir | None, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
        """``(number, name)`` of the entries whose name ``pattern`` numbers, in order."""
        found = []
        for name in self.names(directory):
            match = pattern.match(name)
            if match:
                found.append((int(match.group(1)), name))
        return sorted(found)

    # -- the team checkpoint: checkpoint/{seq:010d}.json, created exclusively ----------

    def checkpoint(self, limit: int) -> bytes | None:
        """The newest checkpoint file's bytes (None: there is none, or it is unusable)."""
        self.team_dir().close()
        with self.reading("checkpoint") as directory:
            found = self.listing(directory, _CHECKPOINT)
            return self.read(directory, found[-1][1], limit) if found else None

    def put_checkpoint(self, seq: int, data: bytes) -> None:
        """Create ``checkpoint/{seq}.json``; :class:`ConflictError` when that seq is there
        already (compare-and-swap: created exclusively).  A file above ``seq`` is none an
        admin signed after this one's predecessor (it would have taken this seq): it is
        planted or stale, and removed, so that members read the new one."""
        with self.writing("checkpoint") as directory:
            found = self.listing(directory, _CHECKPOINT)
            if not directory.write(f"{seq:010d}.json", data, exclusive=True):
                raise ConflictError(f"checkpoint {seq} is already in {self.base}")
            below = [name for n, name in found if n < seq]
            above = [name for n, name in found if n > seq]
            for name in below[:-CHECKPOINTS_KEPT] + above:
                with contextlib.suppress(TransportError, OSError):
                    directory.unlink(name)
