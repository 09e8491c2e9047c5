"""Seeing a shared folder change, for ``sync --watch`` (``FolderTransport.wait_for_change``).

The cursor is a digest of what a sync reads (:func:`fingerprint`), so a change made
while nobody watched, or that a network share never reported, is seen on the next call;
between calls, watchfiles wakes the watcher.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
import time
from pathlib import Path

import watchfiles

from ...protocol.errors import TransportError

__all__ = ["NAME", "fingerprint", "wait_for_change"]

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
"""A folder entry that may name a team, project or writer directory."""
_WATCH_DEBOUNCE_MS = 400


def fingerprint(base: Path, ignore_writer: str | None) -> str:
    """A digest of what a sync reads: names, sizes and mtimes of rosters, keyrings,
    manifests, private ones included (but ``ignore_writer``'s), member keyrings and join
    requests; chunks follow manifests."""
    digest = hashlib.blake2b(digest_size=16)
    dirs = [d for d in (base / "roster", base / "requests") if not d.is_symlink()]
    dirs += _subdirs(base / "keyrings")
    for project_dir in _subdirs(base / "snapshots"):
        dirs += [d for d in _subdirs(project_dir) if d.name != ignore_writer]
    for member_dir in _subdirs(base / "private"):  # member keyrings, siblings' chains
        for device_dir in _subdirs(member_dir):
            if device_dir.name in ("keyrings", "trust"):
                dirs.append(device_dir)
            elif device_dir.name != ignore_writer:
                dirs += _subdirs(device_dir)
    for directory in dirs:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.name.endswith(".json"):
                continue
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                rel = os.path.relpath(entry.path, base)
                digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def wait_for_change(
    base: Path,
    since: str | None,
    timeout_s: float,
    *,
    ignore_writer: str | None = None,
    stop: threading.Event | None = None,
) -> tuple[str, bool]:
    """The interface's ``wait_for_change`` over the team folder ``base`` (watching the
    shared folder while the team folder is missing)."""
    top = base if base.is_dir() else base.parent.parent
    current = fingerprint(base, ignore_writer)
    if since is None or current != since:
        return current, since is not None
    own = None if ignore_writer is None else f"{os.sep}{ignore_writer}{os.sep}"

    def relevant(_change: watchfiles.Change, path: str) -> bool:
        return not path.endswith(".tmp") and (own is None or own not in path)

    deadline = time.monotonic() + timeout_s
    try:
        for _changes in watchfiles.watch(
            top,
            watch_filter=relevant,
            debounce=_WATCH_DEBOUNCE_MS,
            rust_timeout=max(1, int(timeout_s * 1000)),
            yield_on_timeout=True,
            stop_event=stop,
            raise_interrupt=False,
        ):
            current = fingerprint(base, ignore_writer)
            if current != since:
                return current, True
            if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                break
    except OSError as exc:
        raise TransportError(f"cannot watch {top} for changes: {exc}") from exc
    return since, False


def _subdirs(directory: Path) -> list[Path]:
    """Real subdirectories (no links) of ``directory``, by name; none if it is missing."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    return sorted(
        Path(e.path) for e in entries if e.is_dir(follow_symlinks=False) and NAME.match(e.name)
    )
