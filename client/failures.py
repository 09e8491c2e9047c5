"""The last line of defence of the CLI and the viewer: foreign errors in one sentence.

Every layer translates what it expects (``StoreError`` for SQLite,
``TransportError`` for the folder and the hub, ``InputError`` for a bad path or
text).  What still reaches :func:`sealmem.client.cli.main` or a viewer page as a
bare ``sqlite3.Error`` or ``OSError`` is phrased here for people: what failed, on
which file, and what to do.  ``SEALMEM_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from ..protocol.errors import SealmemError
from .paths import home, store_path
from .store.connection import describe as describe_sqlite

__all__ = ["DEBUG_ENV", "debugging", "describe"]

DEBUG_ENV = "SEALMEM_DEBUG"
_RERUN = f"(run with {DEBUG_ENV}=1 to see where)"


def debugging() -> bool:
    """True when ``SEALMEM_DEBUG`` asks for tracebacks instead of one-line errors."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _home() -> str:
    try:
        return str(home())
    except (SealmemError, OSError):  # the message must not fail: fall back to words
        return "SEALMEM_HOME"


def _store() -> str:
    where = _home()
    return "the local store" if where == "SEALMEM_HOME" else str(store_path(Path(where)))


def _os_error(exc: OSError) -> str:
    where = f" {exc.filename}" if exc.filename else ""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        full = "the disk is full" if exc.errno == errno.ENOSPC else "the disk quota is used up"
        return (
            f"{full} ({why}) writing{where or ' under ' + _home()}: free some space and "
            "run the command again; nothing was lost"
        )
    if exc.errno == errno.EROFS:
        return (
            f"cannot write{where or ' a file'}: its file system is mounted read-only; remount "
            "it read-write or set SEALMEM_HOME to a writable directory"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (
            f"permission denied for{where or ' a file'}: check its owner and mode "
            "(ls -l), or set SEALMEM_HOME to a directory this user may write"
        )
    if exc.errno == errno.ENOENT:
        return f"no such file or directory:{where or ' (unnamed)'}; check the path"
    if exc.errno == errno.EISDIR:
        return f"{where.strip() or 'the path'} is a directory, not a file; give a file path"
    if exc.errno == errno.ENOTDIR:
        return f"{where.strip() or 'the path'} is not a directory; give a directory path"
    return f"{why}{':' + where if where else ''} {_RERUN}"


def describe(exc: sqlite3.Error | OSError) -> str:
    """One line for people: what failed and the fix."""
    if isinstance(exc, sqlite3.Error):
        return f"{describe_sqlite(_store(), exc)} {_RERUN}"
    return _os_error(exc)
