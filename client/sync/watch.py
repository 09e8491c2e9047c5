"""``sync --watch``: sync when the team's objects or the local store change.

For a folder, watchfiles reports changes to the folder; for a hub, a thread
long-polls the hub's change feed (``GET /changes``) and wakes the loop when a
teammate published something.  The local store is watched with watchfiles in
both cases.  Changes are debounced by watchfiles.  Folder changes made by our own pushes
(our snapshot directory, temp files) are ignored, and a store change only
triggers a sync when a team memory of ours has not been pushed yet, so a sync's
own writes never trigger the next one.  Network shares do not always deliver
change events, so the watcher also syncs every ``interval_s`` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import watchfiles

from ...protocol.errors import SealmemError
from ...protocol.push import writable_projects
from ..team.session import Team
from . import replica
from .engine import SyncSummary, sync
from .folder import FolderTransport
from .hub import HubTransport

__all__ = ["DEBOUNCE_MS", "has_unpushed", "watch"]

DEBOUNCE_MS = 800


def has_unpushed(team: Team) -> bool:
    """True when a team memory of ours, in a project we may write, is newer than what we
    pushed there (a read-only or revoked member has nothing to push)."""
    roster = team.state.roster
    if roster is None:
        return False
    return replica.has_unpushed(team.conn, team.me, writable_projects(roster, team.me))


def _folder_root(team: Team) -> Path:
    transport = team.transport
    if isinstance(transport, FolderTransport):
        base = transport.base
        return base if base.exists() else Path(transport.location)
    return Path(team.config.location)


def watch(
    team: Team,
    *,
    on_sync: Callable[[SyncSummary], None],
    on_error: Callable[[SealmemError], None],
    interval_s: float = 60.0,
    debounce_ms: int = DEBOUNCE_MS,
    stop: threading.Event | None = None,
) -> None:
    """Sync once, then on every relevant change (or every ``interval_s``) until ``stop``."""
    if isinstance(team.transport, HubTransport):
        _watch_hub(team, team.transport, on_sync, on_error, interval_s, debounce_ms, stop)
        return
    folder = _folder_root(team)
    store_dir = team.store.path.parent
    store_name = team.store.path.name
    own = f"/{team.me}/"

    def relevant(_change: watchfiles.Change, path: str) -> bool:
        if path.endswith(".tmp"):
            return False
        p = Path(path)
        if p.parent == store_dir:
            return p.name.startswith(store_name)
        return own not in path

    def run() -> None:
        try:
            on_sync(sync(team))
        except SealmemError as exc:
            on_error(exc)

    run()
    for changes in watchfiles.watch(
        folder,
        store_dir,
        watch_filter=relevant,
        debounce=debounce_ms,
        rust_timeout=int(interval_s * 1000),
        yield_on_timeout=True,
        stop_event=stop,
        raise_interrupt=False,
    ):
        if stop is not None and stop.is_set():
            return
        from_folder = any(not Path(p).is_relative_to(store_dir) for _, p in changes)
        if not changes or from_folder or has_unpushed(team):
            run()


def _follow_feed(
    hub: HubTransport, me: str, wake: threading.Event, stop: threading.Event, wait_s: float
) -> None:
    """Long-poll the hub's change feed; set ``wake`` when someone else changed something."""
    cursor = 0
    first = True
    while not stop.is_set():
        started = time.monotonic()
        try:
            cursor, changes = hub.changes(cursor, wait_s=0 if first else wait_s)
        except SealmemError:
            stop.wait(min(wait_s, 5.0))  # hub unreachable: the interval sync reports it
            continue
        except RuntimeError:  # the transport was closed under us while stopping
            if stop.is_set():
                return
            raise
        if not first and any(c.get("writer") != me for c in changes):
            wake.set()
        if not first and not changes and time.monotonic() - started < 1.0:
            stop.wait(1.0)  # a hub that answers without waiting: do not spin
        first = False


def _watch_hub(
    team: Team,
    hub: HubTransport,
    on_sync: Callable[[SyncSummary], None],
    on_error: Callable[[SealmemError], None],
    interval_s: float,
    debounce_ms: int,
    stop: threading.Event | None,
) -> None:
    stop = stop or threading.Event()
    wake = threading.Event()
    feed = threading.Thread(
        target=_follow_feed, args=(hub, team.me, wake, stop, min(25.0, interval_s)), daemon=True
    )
    feed.start()
    store_dir = team.store.path.parent
    store_name = team.store.path.name

    def relevant(_change: watchfiles.Change, path: str) -> bool:
        return Path(path).name.startswith(store_name) and not path.endswith(".tmp")

    def run() -> None:
        wake.clear()
        try:
            on_sync(sync(team))
        except SealmemError as exc:
            on_error(exc)

    run()
    waited_ms = 0
    poll_ms = max(200, min(debounce_ms, 1000))
    for changes in watchfiles.watch(
        store_dir,
        watch_filter=relevant,
        debounce=debounce_ms,
        rust_timeout=poll_ms,
        yield_on_timeout=True,
        stop_event=stop,
        raise_interrupt=False,
    ):
        if stop.is_set():
            break
        waited_ms += poll_ms if not changes else 0
        if wake.is_set() or (changes and has_unpushed(team)) or waited_ms >= interval_s * 1000:
            waited_ms = 0
            run()
    stop.set()
    feed.join(timeout=1.0)
