"""Why this user cannot write the store: the one answer a refused write and ``doctor``
give, naming the cause found (the file's mode, its directory, its owner, a read-only
mount) and the command that fixes it, instead of a list of things to check."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["why_not_writable"]


def why_not_writable(path: Path) -> str | None:
    """What keeps this user from writing the store at ``path`` and how to fix it, or None
    when nothing is found (the file, its ``-wal``/``-shm`` and its directory are writable)."""
    path = Path(path)
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return (
                "its file system is mounted read-only: remount it read-write, or set "
                "SEALMEM_HOME to a home on a writable disk"
            )
        info = path.stat()
    except OSError:
        return None
    if info.st_uid != os.geteuid() and not os.access(path, os.W_OK):
        return (
            f"{path} belongs to another user (uid {info.st_uid}): run sealmem as that user, "
            "or set SEALMEM_HOME to a home of your own"
        )
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if file.exists() and not os.access(file, os.W_OK):
            mode = stat.S_IMODE(file.stat().st_mode)
            return f"{file} is read-only (mode {mode:o}): make it writable with chmod u+w '{file}'"
    if not os.access(path.parent, os.W_OK):
        return (
            f"its directory {path.parent} is not writable (SQLite keeps the store's -wal and "
            f"-shm files there): make it writable with chmod u+w '{path.parent}'"
        )
    return None
