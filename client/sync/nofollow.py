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
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from ...protocol.errors import TransportError
from .transport import Unreachable

__all__ = ["SafeDir", "Symlinked", "Unusable"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW


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

    def __init__(self, fd: int, path: Path) -> None:
        self._fd = fd
        self.path = path

    @classmethod
    def open(cls, root: Path, parts: Sequence[str], *, create: bool = False) -> SafeDir | None:
        """``root/parts...``, each part a plain directory (made with ``create``).

        None when a part is missing (or is no directory) and ``create`` is false;
        :class:`Symlinked` when a part is a link, whatever ``create`` says.
        """
        try:
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)  # the user's own choice: followed
        except OSError as exc:
            raise Unreachable(f"cannot open {root}: {exc.strerror}") from exc
        here: SafeDir | None = cls(fd, root)
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
        try:
            os.mkdir(name, 0o755, dir_fd=self._fd)
        except FileExistsError:
            pass  # made meanwhile by another member: open it like any other
        except OSError as exc:
            raise TransportError(f"cannot create {path}: {exc.strerror}") from exc
        found = self._open_dir(name, path)
        if found is None:
            raise TransportError(f"{path} is not a directory; remove it and sync again")
        return found

    def _open_dir(self, name: str, path: Path) -> SafeDir | None:
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

    # -- entries -------------------------------------------------------------------

    def names(self) -> list[str]:
        try:
            return os.listdir(self._fd)
        except OSError as exc:
            raise Unusable(self.path, exc) from exc

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self._fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise Unusable(self.path / name, exc) from exc

    def is_link(self, name: str) -> bool:
        found = self.lstat(name)
        return found is not None and stat.S_ISLNK(found.st_mode)

    def is_file(self, name: str) -> bool:
        found = self.lstat(name)
        return found is not None and stat.S_ISREG(found.st_mode)

    def read(self, name: str, limit: int) -> bytes | None:
        """At most ``limit + 1`` bytes of the regular file ``name`` (None: no such file).

        A link, FIFO, device or directory under a file's name is no file: a planted
        one must neither steer the read elsewhere, exhaust memory nor block the sync.
        One byte over the limit is enough for the verifier to refuse it by name.
        Any other failure to open or read it (a socket, no permission, an I/O error)
        is :class:`Unusable`, about this entry only.
        """
        path = self.path / name
        try:
            fd = os.open(name, _FILE, dir_fd=self._fd)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None
            raise Unusable(path, exc) from exc
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
            raise Unusable(path, exc) from exc
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes, *, exclusive: bool = False) -> bool:
        """Write ``name`` atomically (temp file, fsync, rename; link with ``exclusive``).

        The rename replaces a planted link itself, never what it points at.  With
        ``exclusive`` the return value says whether this call created the file.
        """
        path = self.path / name
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW
        try:
            fd = os.open(tmp, flags, 0o644, dir_fd=self._fd)
        except OSError as exc:
            raise TransportError(f"cannot write {path}: {exc.strerror}") from exc
        try:
            with os.fdopen(fd, "wb") as fh:
                with contextlib.suppress(OSError):  # a share may refuse chmod
                    os.fchmod(fh.fileno(), 0o644)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if exclusive:
                try:
                    os.link(tmp, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
                except FileExistsError:
                    return False
                finally:
                    os.unlink(tmp, dir_fd=self._fd)
            else:
                os.replace(tmp, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self._fd)
            if isinstance(exc, OSError):
                raise TransportError(f"cannot write {path}: {exc.strerror}") from exc
            raise
        with contextlib.suppress(OSError):
            os.fsync(self._fd)
        return True

    def unlink(self, name: str) -> None:
        """Remove the entry ``name`` itself (a link is removed, not what it points at)."""
        try:
            os.unlink(name, dir_fd=self._fd)
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

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
