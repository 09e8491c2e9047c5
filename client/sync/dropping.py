"""Dropping versions this store must no longer hold, with the rule of ``protocol.revocation``.

Two callers, one mechanism:

- :func:`drop_revoked`: the versions of writers revoked without a pin for the
  project (run once per new revocation, at the start of a sync's pull);
- :func:`drop_far_ahead`: pulled versions whose clock is more than
  ``MAX_AHEAD_MS`` ahead (a store that merged them before clocks were bounded),
  and the store clock brought back (at the start of each pull, and by
  ``sealmem doctor``).

For each affected id the replica's versions (the winner and its ``history``
rows) go through the pure rule; the best remaining version becomes the winner
again with the provenance it arrived with, and the dropped winner moves to
history.  A memory with no remaining version leaves the winners, and stays in
history.  Run inside the caller's transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ...protocol.errors import SealmemError
from ...protocol.hlc import MAX_AHEAD_MS, Hlc, too_far_ahead
from ...protocol.record import Record
from ...protocol.revocation import best_remaining, dropped_writers, recovered_clock
from ...protocol.roster import Roster
from ..store.connection import get_meta, set_meta, transaction
from ..store.memory import Check, Provenance
from ..store.rows import MEMORY_COLUMNS, archive, read_hlc, record_from_row, write_version

__all__ = [
    "Dropped",
    "clock_check",
    "drop_far_ahead",
    "drop_revoked",
    "pending",
    "preview_writer",
]

_APPLIED_KEY = "revocations_dropped"
"""Meta key: how many revocations of the trusted roster this store has applied."""


@dataclass
class Dropped:
    """What a drop did (or, for :func:`preview_writer`, would do)."""

    restored: int = 0
    removed: int = 0
    ids: list[str] = field(default_factory=list)
    clock: Hlc | None = None

    @property
    def affected(self) -> int:
        return self.restored + self.removed


@dataclass(frozen=True)
class _Step:
    row: sqlite3.Row
    best: Record | None
    source: sqlite3.Row | None  # the history row ``best`` comes from


def _history(conn: sqlite3.Connection, memory_id: str) -> list[tuple[Record, sqlite3.Row]]:
    out: list[tuple[Record, sqlite3.Row]] = []
    for hrow in conn.execute("SELECT * FROM history WHERE id = ? ORDER BY seq", (memory_id,)):
        try:
            out.append((Record.from_wire(json.loads(hrow["record_json"])), hrow))
        except (SealmemError, ValueError):  # a version no longer valid cannot come back
            continue
    return out


def _plan(
    rows: Iterable[sqlite3.Row], conn: sqlite3.Connection, dropped: Callable[[Record], bool]
) -> list[_Step]:
    steps: list[_Step] = []
    for row in rows:
        winner = record_from_row(row)
        if not dropped(winner):
            continue
        history = _history(conn, winner.id)
        best = best_remaining([winner, *(r for r, _ in history)], dropped)
        source = None
        if best is not None:
            source = next(h for r, h in reversed(history) if r == best)
        steps.append(_Step(row, best, source))
    return steps


def _apply(conn: sqlite3.Connection, steps: list[_Step], now: int) -> Dropped:
    result = Dropped()
    for step in steps:
        mid = step.row["id"]
        result.ids.append(mid)
        if step.best is None or step.source is None:
            archive(conn, step.row, now)
            conn.execute("DELETE FROM supersedes WHERE new_id = ?", (mid,))
            conn.execute("DELETE FROM memories WHERE id = ?", (mid,))
            result.removed += 1
            continue
        src = step.source
        write_version(
            conn,
            step.best,
            provenance=Provenance(
                transport=src["transport"],
                signer=src["signer"],
                signer_name=src["signer_name"],
                verified=bool(src["verified"]),
                received_at=src["received_at"],
                snapshot_seq=src["snapshot_seq"],
            ),
            local_importance=max(float(src["local_importance"]), step.best.importance),
            seen_count=int(step.row["seen_count"]),
            updated_at=now,
        )
        conn.execute("DELETE FROM history WHERE seq = ?", (src["seq"],))  # it is the winner now
        result.restored += 1
    return result


def _by_any_of(kids: frozenset[str]) -> Callable[[Record], bool]:
    return lambda record: record.editor in kids


def _pulled_by(conn: sqlite3.Connection, project: str, kids: frozenset[str]) -> list[sqlite3.Row]:
    marks = ", ".join("?" * len(kids))
    return conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE project = ? AND editor IN ({marks}) "
        "AND transport != 'local' ORDER BY id",
        (project, *sorted(kids)),
    ).fetchall()


def pending(conn: sqlite3.Connection, roster: Roster, now: int) -> bool:
    """Whether :func:`drop_revoked` or :func:`drop_far_ahead` has work (read only, so that a
    sync opens no write transaction when there is nothing to drop)."""
    applied = int(get_meta(conn, _APPLIED_KEY) or 0)
    return applied < len(roster.revocations) or too_far_ahead(read_hlc(conn), now)


def drop_revoked(conn: sqlite3.Connection, roster: Roster, me: str, now: int) -> Dropped:
    """Apply the revocations of ``roster`` this store has not applied yet.

    Later versions of a revoked writer are refused by the verifier (only a pinned
    manifest stays valid, and what it holds is kept), so each revocation needs
    applying once; the count of applied ones is kept in the ``meta`` table.
    """
    applied = int(get_meta(conn, _APPLIED_KEY) or 0)
    if applied >= len(roster.revocations):
        return Dropped()
    result = Dropped()
    projects = {p for (p,) in conn.execute("SELECT DISTINCT project FROM memories")}
    for project in sorted(projects):
        kids = dropped_writers(roster, project, me)
        if not kids:
            continue
        rows = _pulled_by(conn, project, kids)
        done = _apply(conn, _plan(rows, conn, _by_any_of(kids)), now)
        result.restored += done.restored
        result.removed += done.removed
        result.ids += done.ids
    set_meta(conn, _APPLIED_KEY, str(len(roster.revocations)))
    return result


def preview_writer(conn: sqlite3.Connection, kid: str) -> Dropped:
    """What dropping every pulled version of ``kid`` would do here (nothing is written)."""
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE editor = ? AND transport != 'local' "
        "ORDER BY id",
        (kid,),
    ).fetchall()
    result = Dropped()
    for step in _plan(rows, conn, lambda r: r.editor == kid):
        result.ids.append(step.row["id"])
        if step.best is None:
            result.removed += 1
        else:
            result.restored += 1
    return result


def drop_far_ahead(conn: sqlite3.Connection, now: int, *, check_all: bool = False) -> Dropped:
    """Drop pulled winners more than ``MAX_AHEAD_MS`` ahead of ``now``; fix the store clock.

    The store clock is never behind a version it holds, so a clock within bounds
    means there is nothing to drop: a sync checks only that, unless ``check_all``
    (``sealmem doctor``).
    """
    clock = read_hlc(conn)
    if not check_all and not too_far_ahead(clock, now):
        return Dropped()
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE hlc_wall > ? AND transport != 'local' "
        "ORDER BY id",
        (now + MAX_AHEAD_MS,),
    ).fetchall()
    result = _apply(conn, _plan(rows, conn, lambda r: too_far_ahead(r.hlc, now)), now)
    top = conn.execute(
        "SELECT hlc_wall, hlc_counter FROM memories ORDER BY hlc_wall DESC, hlc_counter DESC "
        "LIMIT 1"
    ).fetchone()
    winners = [] if top is None else [Hlc(int(top[0]), int(top[1]))]
    fixed = recovered_clock(clock, winners, now)
    if fixed is not None:
        set_meta(conn, "hlc", f"{fixed.wall}:{fixed.counter}")
        result.clock = fixed
    return result


def clock_check(conn: sqlite3.Connection, now: int) -> Check:
    """``sealmem doctor``: look for far-ahead versions and clock in the whole store; mend them."""
    with transaction(conn):
        done = drop_far_ahead(conn, now, check_all=True)
    if not done.affected and done.clock is None:
        return Check("clock", True, "no version and not the store clock is more than 2 days ahead")
    parts = []
    if done.affected:
        parts.append(
            f"dropped {done.affected} pulled versions dated more than 2 days ahead "
            f"({done.restored} memories back to an earlier version, {done.removed} "
            "moved to history)"
        )
    if done.clock is not None:
        parts.append(f"brought the store clock back to {done.clock.wall}:{done.clock.counter}")
    return Check("clock", True, "repaired: " + "; ".join(parts))
