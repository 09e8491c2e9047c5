"""``sync --watch``: sync when the team's objects or the local store change.

A thread follows the transport's :meth:`~sealmem.client.sync.transport.Transport.wait_for_change`
(watchfiles on a folder, the long-poll change feed of a hub) and wakes the loop
when a teammate published something; our own pushes are not a change.  The
local store is watched with watchfiles, debounced, and a store change only
triggers a sync when a team memory of ours has not been pushed yet, so a sync's
own writes never trigger the next one.  Network shares do not always deliver
change events and a transport may not report changes at all, so the watcher
also syncs every ``interval_s`` seconds.

The warning that team memories of ours stay local in a project (no write grant)
would come back on every cycle: it is passed on once, and again only when its
count or reason changes (:func:`quiet_repeats`).
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
from .transport import Transport

__all__ = ["DEBOUNCE_MS", "has_unpushed", "quiet_repeats", "watch"]

DEBOUNCE_MS = 800


def has_unpushed(team: Team) -> bool:
    """True when a team memory of ours, in a project we may write, is newer than what we
    pushed there (a read-only or revoked member has nothing to push)."""
    roster = team.trusted().roster
    if roster is None:
        return False
    return replica.has_unpushed(team.conn, team.me, writable_projects(roster, team.me))


def quiet_repeats(summary: SyncSummary, shown: set[str]) -> set[str]:
    """Drop from ``summary.warnings`` the local-only warnings already in ``shown`` (what
    the previous sync said); return what this sync says, for the next call.
    ``summary.local_only`` keeps them all."""
    said = {entry.message() for entry in summary.local_only}
    summary.warnings = [w for w in summary.warnings if w not in (said & shown)]
    return said


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
    stop = stop or threading.Event()
    wake = threading.Event()
    follower = threading.Thread(
        target=_follow,
        args=(team.transport, team.me, wake, stop, min(25.0, interval_s)),
        daemon=True,
    )
    follower.start()
    store_dir = team.store.path.parent
    store_name = team.store.path.name

    def relevant(_change: watchfiles.Change, path: str) -> bool:
        return Path(path).name.startswith(store_name) and not path.endswith(".tmp")

    shown: set[str] = set()

    def run() -> None:
        nonlocal shown
        wake.clear()
        try:
            summary = sync(team)
        except SealmemError as exc:
            on_error(exc)
            return
        shown = quiet_repeats(summary, shown)
        on_sync(summary)

    run()
    waited_ms = 0
    poll_ms = max(200, min(debounce_ms, 1000))
    try:
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
    finally:
        stop.set()
        follower.join(timeout=1.0)


def _follow(
    transport: Transport, me: str, wake: threading.Event, stop: threading.Event, wait_s: float
) -> None:
    """Wait for the transport's changes; set ``wake`` when someone else changed something."""
    cursor: str | None = None
    while not stop.is_set():
        started = time.monotonic()
        first = cursor is None
        try:
            cursor, changed = transport.wait_for_change(cursor, wait_s, ignore_writer=me, stop=stop)
        except SealmemError:
            stop.wait(min(wait_s, 5.0))  # unreachable: the interval sync reports it
            continue
        except RuntimeError:  # the transport was closed under us while stopping
            if stop.is_set():
                return
            raise
        if changed:
            wake.set()
        elif not first and time.monotonic() - started < 1.0:
            stop.wait(1.0)  # a transport that answers without waiting: do not spin
