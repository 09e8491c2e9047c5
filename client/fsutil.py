"""Crash-safe file writes: temp file in the same directory, fsync, rename, fsync the directory."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "fsync_dir"]


def fsync_dir(path: Path) -> None:
    """Make a rename inside ``path`` durable (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(
    path: Path,
    data: bytes | Callable[[BinaryIO], object],
    *,
    mode: int = 0o600,
    exclusive: bool = False,
) -> bool:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    ``data`` may be a function that writes the content to the file it is given
    (a large content, written as it is produced).

    With ``exclusive`` the file is only created if absent (link, not rename), and the
    return value says whether this call created it.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            # Exactly ``mode`` whatever the umask (which can only remove bits); a share
            # that refuses chmod (vfat, some network mounts) keeps what open() gave.
            with contextlib.suppress(OSError):
                os.fchmod(fh.fileno(), mode)
            if callable(data):
                data(fh)
            else:
                fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
    return True
