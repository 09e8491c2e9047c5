"""``sync --watch``: sync when a memory of ours or the team's objects change.

Three things wake the loop:

- **the team changed**: a thread follows the transport's
  :meth:`~sealmem.client.sync.transport.Transport.wait_for_change` (watchfiles
  on a folder, the long-poll change feed of a hub); our own pushes are not a
  change;
- **a memory of ours changed**: the store's files are watched with watchfiles,
  debounced, but a file event only *asks*; the loop syncs when
  :func:`local_version` moved since the last sync started.  That marker is the
  newest version (HLC) and the count of our own team memories, which only a
  memory write moves: the writes a sync makes itself (run record, refusal log,
  chain heads, teammates' versions) never trigger the next sync.  (A sync that
  re-redacts one of ours, or pulls a teammate's edit over one of ours, moves it
  once: one more sync, then quiet.)
- **the interval**: network shares do not always deliver change events and a
  transport may not report changes at all, so it also syncs every
  ``interval_s`` seconds.

A sync that fails (folder gone, hub down, store locked) is retried after an
exponential backoff with full jitter (:class:`~sealmem.client.sync.backoff.Backoff`:
1 s doubling up to 5 min); until then store writes and the interval wake
nothing, only a change reported by the transport (it answers again) retries at
once.  A success resets it.  ``on_error`` hears of a failure once, and again
only when the error changes; ``on_recovered`` once when syncing works again: one
line per change of state, not per attempt.

The warning that team memories of ours stay local in a project (no write grant),
and the one that this machine's clock is off, would come back on every cycle:
each is passed on once, and again only when it changes (:func:`quiet_repeats`).

The clock, the wait and the randomness are parameters, so that a test can run
the loop over a simulated timeline.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import watchfiles

from ...protocol.errors import SealmemError
from . import clockhealth
from .backoff import Backoff
from .engine import SyncSummary, sync
from .session import Team
from .transport import Transport

__all__ = ["DEBOUNCE_MS", "local_version", "quiet_repeats", "watch"]

DEBOUNCE_MS = 800

#: ``(count, newest hlc wall, its counter)`` of our own team memories; None: unreadable.
Marker = tuple[int, int, int] | None


def local_version(team: Team) -> Marker:
    """What only a memory write of ours moves: the count of our own team memories and
    the newest HLC among them (every local write ticks the HLC past all it has seen)."""
    try:
        row = team.conn.execute(
            "SELECT COUNT(*), MAX(hlc_wall), "
            "(SELECT hlc_counter FROM memories WHERE editor = ?1 AND visibility = 'team' "
            " ORDER BY hlc_wall DESC, hlc_counter DESC LIMIT 1) "
            "FROM memories WHERE editor = ?1 AND visibility = 'team'",
            (team.me,),
        ).fetchone()
    except sqlite3.Error:
        return None  # the sync itself will say what is wrong with the store
    return (int(row[0]), int(row[1] or 0), int(row[2] or 0))


def quiet_repeats(summary: SyncSummary, shown: set[str]) -> set[str]:
    """Drop from ``summary.warnings`` the local-only warnings already in ``shown`` (what
    the previous sync said); return what this sync says, for the next call.
    ``summary.local_only`` keeps them all."""
    said = {entry.message() for entry in summary.local_only}
    said |= {w for w in summary.warnings if w.startswith(clockhealth.WARNING_PREFIXES)}
    summary.warnings = [w for w in summary.warnings if w not in (said & shown)]
    return said


def watch(
    team: Team,
    *,
    on_sync: Callable[[SyncSummary], None],
    on_error: Callable[[SealmemError], None],
    on_recovered: Callable[[int], None] | None = None,
    interval_s: float = 60.0,
    debounce_ms: int = DEBOUNCE_MS,
    backoff: Backoff | None = None,
    stop: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
    wait: Callable[[float], object] | None = None,
    rand: Callable[[], float] = random.random,
) -> None:
    """Sync once, then on every relevant change (or every ``interval_s``) until ``stop``.

    ``on_error(exc)`` when syncing starts failing (or fails differently),
    ``on_recovered(failed_attempts)`` when it works again.  ``wait(seconds)`` blocks
    until that much ``clock`` time passed or a change woke the loop (the default
    returns early on a change); ``rand`` draws the jitter in ``[0, 1]``.
    """
    stop = stop or threading.Event()
    poke = threading.Event()
    team_changed = threading.Event()
    store_touched = threading.Event()
    helpers = [
        threading.Thread(
            target=_follow,
            args=(team.transport, team.me, team_changed, poke, stop, min(25.0, interval_s)),
            daemon=True,
        ),
        threading.Thread(
            target=_watch_store,
            args=(team.store.path, store_touched, poke, stop, debounce_ms),
            daemon=True,
        ),
    ]
    for helper in helpers:
        helper.start()
    loop = _Loop(
        team, on_sync, on_error, on_recovered, interval_s, backoff or Backoff(), clock, rand
    )
    pause = wait or poke.wait
    try:
        loop.attempt()
        while not stop.is_set():
            poke.clear()
            if loop.due(team_changed, store_touched):
                loop.attempt()
            else:
                pause(max(0.0, loop.next_at() - clock()))
    except KeyboardInterrupt:  # Ctrl-C ends a watch; it is not an error
        pass
    finally:
        stop.set()
        poke.set()
        for helper in helpers:
            helper.join(timeout=1.0)


@dataclass
class _Loop:
    """One watch's state: when it last tried, how many failures in a row, what it said."""

    team: Team
    on_sync: Callable[[SyncSummary], None]
    on_error: Callable[[SealmemError], None]
    on_recovered: Callable[[int], None] | None
    interval_s: float
    backoff: Backoff
    clock: Callable[[], float]
    rand: Callable[[], float]
    failures: int = 0
    started_at: float = 0.0
    retry_at: float = 0.0
    baseline: Marker = None
    error: tuple[type[SealmemError], str] | None = None
    shown: set[str] = field(default_factory=set)

    def due(self, team_changed: threading.Event, store_touched: threading.Event) -> bool:
        """Is it time to sync?  A change the transport reports always is; while failing,
        only the end of the backoff is; else a memory of ours that moved since the last
        sync started (the store's file events only ask), or the interval."""
        if team_changed.is_set():
            team_changed.clear()
            return True
        now = self.clock()
        if self.failures:
            return now >= self.retry_at
        if store_touched.is_set():
            store_touched.clear()
            if local_version(self.team) != self.baseline:
                return True
        return now >= self.started_at + self.interval_s

    def next_at(self) -> float:
        """When ``due`` turns true if nothing wakes the loop before."""
        return self.retry_at if self.failures else self.started_at + self.interval_s

    def attempt(self) -> None:
        self.baseline = local_version(self.team)
        self.started_at = self.clock()
        try:
            summary = sync(self.team)
        except SealmemError as exc:
            self.failures += 1
            self.retry_at = self.clock() + self.backoff.delay(self.failures, self.rand)
            error = (type(exc), str(exc))
            if error != self.error:
                self.on_error(exc)
            self.error = error
            return
        if self.failures and self.on_recovered is not None:
            self.on_recovered(self.failures)
        self.failures, self.error = 0, None
        self.shown = quiet_repeats(summary, self.shown)
        self.on_sync(summary)


def _watch_store(
    store: Path,
    touched: threading.Event,
    poke: threading.Event,
    stop: threading.Event,
    debounce_ms: int,
) -> None:
    """Set ``touched`` when the store's files change (debounced); the loop decides."""

    def relevant(_change: watchfiles.Change, path: str) -> bool:
        return Path(path).name.startswith(store.name) and not path.endswith(".tmp")

    try:
        for _changes in watchfiles.watch(
            store.parent,
            watch_filter=relevant,
            debounce=debounce_ms,
            rust_timeout=1000,
            stop_event=stop,
            raise_interrupt=False,
        ):
            touched.set()
            poke.set()
    finally:
        poke.set()  # ``stop`` was set (or the watch failed): let the loop see it


def _follow(
    transport: Transport,
    me: str,
    changed_event: threading.Event,
    poke: threading.Event,
    stop: threading.Event,
    wait_s: float,
) -> None:
    """Wait for the transport's changes; set ``changed_event`` when someone else changed
    something."""
    cursor: str | None = None
    while not stop.is_set():
        started = time.monotonic()
        first = cursor is None
        try:
            cursor, changed = transport.wait_for_change(cursor, wait_s, ignore_writer=me, stop=stop)
        except SealmemError:
            stop.wait(min(wait_s, 5.0))  # unreachable: the loop's retries report it
            continue
        except RuntimeError:  # the transport was closed under us while stopping
            if stop.is_set():
                return
            raise
        if changed:
            changed_event.set()
            poke.set()
        elif not first and time.monotonic() - started < 1.0:
            stop.wait(1.0)  # a transport that answers without waiting: do not spin
