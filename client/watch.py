"""``sync --watch``: sync when the team folder or the local store changes (watchfiles).

Changes are debounced by watchfiles.  Folder changes made by our own pushes
(our snapshot directory, temp files) are ignored, and a store change only
triggers a sync when a team memory of ours has not been pushed yet, so a sync's
own writes never trigger the next one.  Network shares do not always deliver
change events, so the watcher also syncs every ``interval_s`` seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import watchfiles

from sealmem.client.folder import FolderTransport
from sealmem.client.sync import SyncSummary, sync
from sealmem.client.team import Team
from sealmem.protocol.errors import SealmemError

__all__ = ["DEBOUNCE_MS", "has_unpushed", "watch"]

DEBOUNCE_MS = 800


def has_unpushed(team: Team) -> bool:
    """True when a team memory of ours is newer than everything we pushed."""
    conn = team.conn
    mine = conn.execute(
        "SELECT MAX(hlc_wall * 1048576 + MIN(hlc_counter, 1048575)) FROM memories "
        "WHERE editor = ? AND visibility = 'team'",
        (team.me,),
    ).fetchone()[0]
    pushed = conn.execute("SELECT MAX(pushed_wall) FROM own_chain").fetchone()[0]
    return mine is not None and (pushed is None or int(mine) > int(pushed))


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
