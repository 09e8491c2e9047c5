"""Directories of an untrusted shared folder, opened without following symbolic links.

Anyone with write access to the share can replace ``snapshots/{project}/{kid}``
with a link to a directory on a reader's own disk; following it, a push would
write there and chunk collection would delete from there.  So below a trusted
root (the folder the user configured, which may itself be a link), every
component is opened relative to its parent's descriptor with ``O_NOFOLLOW``,
and every file too: a link is refused wherever it is, including one swapped in
between a check and a use.  Reads of a file that is a link (or a FIFO, device,
directory) see no file; a link in place of a directory is :class:`Symlinked`.

One entry the share holds but that cannot be opened or read (a planted unix
socket: ENXIO; a file or directory nobody may read: EACCES; an I/O error) is
:class:`Unusable`: the caller skips that entry with a warning.  Only the root
itself failing is :class:`~sealmem.client.sync.transport.Unreachable`.

**Without descriptor-relative opens** (Windows has neither ``O_NOFOLLOW`` nor
``dir_fd``; :data:`DIR_HANDLES` says which way this platform goes), every
component is checked by path instead, before each use: ``lstat`` refuses a
link or a reparse point (a junction), the component's real path must be its
parent's real path plus its name (so no link anywhere above it either), and a
file read must open the very file that was checked (same device and inode).
This is **not race-free**: someone who can write to the share and swaps a
component for a link between the check and the open can still redirect that
one operation.  It narrows the window to microseconds; it does not close it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path

from ...protocol.errors import TransportError
from .transport import Unreachable

__all__ = ["DIR_HANDLES", "SafeDir", "Symlinked", "Unusable"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
_DIR = os.O_RDONLY | _DIRECTORY | _NOFOLLOW
_FILE = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW | _BINARY

#: True where directories are opened as handles and entries relative to them with
#: ``O_NOFOLLOW`` (race-free); False where each component is checked by path first.
DIR_HANDLES = (
    bool(_NOFOLLOW and _DIRECTORY)
    and {os.open, os.stat, os.mkdir, os.unlink, os.link} <= os.supports_dir_fd
    and os.listdir in os.supports_fd
)


def _is_link(found: os.stat_result) -> bool:
    """A symbolic link, or on Windows any reparse point (junctions included)."""
    attributes = getattr(found, "st_file_attributes", 0)
    return stat.S_ISLNK(found.st_mode) or bool(attributes & stat.FILE_ATTRIBUTE_REPARSE_POINT)


def _same_path(a: str, b: str) -> bool:
    return os.path.normcase(a) == os.path.normcase(b)


class Symlinked(TransportError):
    """A component inside the team folder is a symbolic link, which is never followed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"{path} is a symbolic link inside the team folder; sealmem never follows links "
            "there (anyone with access to the share could point one at your own files). "
            f"Remove it (rm {path}) and sync again"
        )


class Unusable(TransportError):
    """One entry inside the team folder cannot be opened or read (skip it, warn)."""

    def __init__(self, path: Path, exc: OSError) -> None:
        self.path = path
        super().__init__(
            f"{path} cannot be used ({exc.strerror or exc}); it is not a file sealmem wrote "
            f"or the share denies access to it. Remove it (rm {path}) or fix its permissions"
        )


class SafeDir:
    """An open directory reached from a trusted root without following any link."""

    def __init__(self, fd: int, path: Path, real: str = "") -> None:
        self._fd = fd  # -1 without descriptor-relative opens: then ``real`` is checked
        self.path = path
        self._real = real

    @classmethod
    def open(cls, root: Path, parts: Sequence[str], *, create: bool = False) -> SafeDir | None:
        """``root/parts...``, each part a plain directory (made with ``create``).

        None when a part is missing (or is no directory) and ``create`` is false;
        :class:`Symlinked` when a part is a link, whatever ``create`` says.
        """
        try:  # the root is the user's own choice: a link there is followed
            if DIR_HANDLES:
                here: SafeDir | None = cls(os.open(root, os.O_RDONLY | _DIRECTORY), root)
            elif stat.S_ISDIR(os.stat(root).st_mode):
                here = cls(-1, root, os.path.realpath(root))
            else:
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(root))
        except OSError as exc:
            raise Unreachable(f"cannot open {root}: {exc.strerror}") from exc
        try:
            for part in parts:
                if here is None:
                    break
                parent, here = here, None
                with parent:
                    here = parent.child(part, create=create)
            return here
        except BaseException:
            if here is not None:
                here.close()
            raise

    def child(self, name: str, *, create: bool = False) -> SafeDir | None:
        """The subdirectory ``name`` (see :meth:`open`)."""
        path = self.path / name
        found = self._open_dir(name, path)
        if found is not None or not create:
            return found
        target, at = self._at(name)
        try:
            # one made meanwhile by another member is opened like any other
            with contextlib.suppress(FileExistsError):
                os.mkdir(target, 0o755, dir_fd=at)
                self.sync()  # the new entry lasts before anything is written inside it
        except OSError as exc:
            raise TransportError(f"cannot create {path}: {exc.strerror}") from exc
        found = self._open_dir(name, path)
        if found is None:
            raise TransportError(f"{path} is not a directory; remove it and sync again")
        return found

    def _open_dir(self, name: str, path: Path) -> SafeDir | None:
        if self._fd < 0:
            return self._check_dir(name, path)
        try:
            return SafeDir(os.open(name, _DIR, dir_fd=self._fd), path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise Unusable(path, exc) from exc
            if self.is_link(name):
                raise Symlinked(path) from exc
            return None  # a plain file where a directory belongs: nothing to read there

    # -- the path fallback (no descriptor-relative opens) --------------------------

    def _confirm(self) -> None:
        """Fallback: this directory still resolves to where it was opened (no link swapped in)."""
        if not _same_path(os.path.realpath(self.path), self._real):
            raise Symlinked(self.path)

    def _check_dir(self, name: str, path: Path) -> SafeDir | None:
        found = self.lstat(name)  # confirms this directory first
        if found is None:
            return None
        if _is_link(found):
            raise Symlinked(path)
        if not stat.S_ISDIR(found.st_mode):
            return None  # a plain file where a directory belongs: nothing to read there
        real = os.path.join(self._real, name)
        if not _same_path(os.path.realpath(path), real):
            raise Symlinked(path)
        return SafeDir(-1, path, real)

    def _at(self, name: str) -> tuple[str, int | None]:
        """Where an ``os`` call finds ``name``: relative to the handle, else a checked path."""
        if self._fd >= 0:
            return name, self._fd
        self._confirm()
        return str(self.path / name), None

    # -- entries -------------------------------------------------------------------

    def names(self) -> list[str]:
        try:
            if self._fd >= 0:
                return os.listdir(self._fd)
            self._confirm()
            return os.listdir(self.path)
        except OSError as exc:
            raise Unusable(self.path, exc) from exc

    def lstat(self, name: str) -> os.stat_result | None:
        target, at = self._at(name)
        try:
            return os.stat(target, dir_fd=at, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise Unusable(self.path / name, exc) from exc

    def is_link(self, name: str) -> bool:
        found = self.lstat(name)
        return found is not None and _is_link(found)

    def read(self, name: str, limit: int) -> bytes | None:
        """At most ``limit + 1`` bytes of the regular file ``name`` (None: no such file).

        A link, FIFO, device or directory under a file's name is no file: a planted
        one must neither steer the read elsewhere, exhaust memory nor block the sync.
        One byte over the limit is enough for the verifier to refuse it by name.
        Any other failure to open or read it (a socket, no permission, an I/O error)
        is :class:`Unusable`, about this entry only.
        """
        path = self.path / name
        checked = None
        if self._fd < 0:  # fallback: only the regular file just checked is read
            checked = self.lstat(name)
            if checked is None or _is_link(checked) or not stat.S_ISREG(checked.st_mode):
                return None
        target, at = self._at(name)
        try:
            fd = os.open(target, _FILE if at is not None else _FILE & ~_NOFOLLOW, dir_fd=at)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            raise Unusable(path, exc) from exc
        try:
            opened = os.fstat(fd)
            if not stat.S_ISREG(opened.st_mode):
                return None
            if checked is not None and (opened.st_dev, opened.st_ino) != (
                checked.st_dev,
                checked.st_ino,
            ):
                return None  # swapped between the check and the open
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
            raise Unusable(path, exc) from exc
        finally:
            os.close(fd)

    def write(
        self, name: str, data: bytes, *, exclusive: bool = False, sync_dir: bool = True
    ) -> bool:
        """Write ``name`` atomically (temp file, fsync, rename; link with ``exclusive``),
        then fsync the directory so the new entry lasts (``sync_dir=False``: the caller
        writes several and calls :meth:`sync` once after the last).

        The rename replaces a planted link itself, never what it points at.  With
        ``exclusive`` the return value says whether this call created the file.
        """
        path = self.path / name
        tmp, at = self._at(f".{name}.{secrets.token_hex(6)}.tmp")
        target = name if at is not None else str(path)
        flags = (
            os.O_CREAT | os.O_EXCL | os.O_WRONLY | _BINARY | (_NOFOLLOW if at is not None else 0)
        )
        try:
            fd = os.open(tmp, flags, 0o644, dir_fd=at)
        except OSError as exc:
            raise TransportError(f"cannot write {path}: {exc.strerror}") from exc
        try:
            with os.fdopen(fd, "wb") as fh:
                if hasattr(os, "fchmod"):
                    with contextlib.suppress(OSError):  # a share may refuse chmod
                        os.fchmod(fh.fileno(), 0o644)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if at is None:
                self._confirm()  # fallback: still the directory that was checked
            if exclusive:
                try:
                    os.link(tmp, target, src_dir_fd=at, dst_dir_fd=at)
                except FileExistsError:
                    return False
                finally:
                    os.unlink(tmp, dir_fd=at)
            else:
                os.replace(tmp, target, src_dir_fd=at, dst_dir_fd=at)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=at)
            if isinstance(exc, OSError):
                raise TransportError(f"cannot write {path}: {exc.strerror}") from exc
            raise
        if sync_dir:
            self.sync()
        return True

    def sync(self) -> None:
        """fsync the directory: the entries renamed into it since last for good."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.fsync(self._fd)

    def unlink(self, name: str) -> None:
        """Remove the entry ``name`` itself (a link is removed, not what it points at)."""
        target, at = self._at(name)
        try:
            os.unlink(target, dir_fd=at)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise TransportError(f"cannot remove {self.path / name}: {exc.strerror}") from exc

    # -- lifetime ------------------------------------------------------------------

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> SafeDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
