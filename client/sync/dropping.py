"""Dropping versions this store must no longer hold, with the rule of ``protocol.revocation``.

One predicate (:class:`~sealmem.protocol.revocation.DropRule`: too far ahead, or by a
writer revoked without a pin, or by a pinned writer past its pin), two callers:

- :func:`drop_revoked`: the winners the revocations of the trusted roster drop
  (run once per new revocation, at the start of a sync's pull); a chain head
  past a pin is forgotten, so the pull that follows accepts the pinned manifest
  again and every reader ends at the pin;
- :func:`drop_far_ahead`: pulled winners whose clock is more than
  ``MAX_AHEAD_MS`` ahead (a store that merged them before clocks were bounded),
  the store clock brought back over the versions within the bound, and this
  member's own far-ahead winners (written while the clock was poisoned) stamped
  again from it and published again (at the start of each pull, and by
  ``sealmem doctor``).

For each dropped winner the replica's versions (the winner and its ``history``
rows) go through the rule; the best remaining version becomes the winner again
with the provenance it arrived with, and the dropped winner moves to history.
A memory with no remaining version leaves the winners, and stays in history.
Run inside the caller's transaction; when ``Dropped.purged`` is not 0 (a tombstone that
won again erased text), run :func:`sealmem.client.store.scrub.settle` after committing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from ...protocol.errors import SealmemError
from ...protocol.hlc import MAX_AHEAD_MS, Hlc, too_far_ahead
from ...protocol.record import Record
from ...protocol.revocation import (
    DropRule,
    Held,
    drop_rule,
    heads_past_pins,
    recovered_clock,
    restamp,
)
from ...protocol.roster import Roster
from ..clock import now_ms
from ..store import scrub
from ..store.connection import get_meta, set_meta, transaction
from ..store.memory import Check, Provenance
from ..store.rows import MEMORY_COLUMNS, provenance_of, read_hlc, record_from_row, save_hlc
from ..store.writer import Batch, Write, write, write_version
from . import replica

__all__ = [
    "Dropped",
    "clock_check",
    "drop_far_ahead",
    "drop_revoked",
    "drop_writer",
    "pending",
    "preview_writer",
]

_APPLIED_KEY = "revocations_applied"
"""Meta key: how many revocations of the trusted roster this store has applied (pins included)."""


@dataclass
class Dropped:
    """What a drop did (or, for :func:`preview_writer`, would do)."""

    restored: int = 0
    removed: int = 0
    ids: list[str] = field(default_factory=list)
    clock: Hlc | None = None  # the store clock after a recovery
    still_ahead: bool = False  # ... and it is still more than MAX_AHEAD_MS ahead
    restamped: int = 0  # own versions stamped again from the recovered clock
    rewound: list[tuple[str, str]] = field(default_factory=list)  # chain heads forgotten
    purged: int = 0  # versions with content a restored tombstone erased: run scrub.settle

    @property
    def affected(self) -> int:
        return self.restored + self.removed

    def add(self, other: Dropped) -> None:
        self.restored += other.restored
        self.removed += other.removed
        self.ids += other.ids
        self.purged += other.purged


@dataclass(frozen=True)
class _Step:
    row: sqlite3.Row
    best: Record | None
    source: sqlite3.Row | None  # the history row ``best`` comes from


def _held(row: sqlite3.Row) -> Held:
    seq = row["snapshot_seq"]
    return Held(record_from_row(row), None if seq is None else int(seq))


def _history(conn: sqlite3.Connection, memory_id: str) -> list[tuple[Held, sqlite3.Row]]:
    out: list[tuple[Held, sqlite3.Row]] = []
    for hrow in conn.execute("SELECT * FROM history WHERE id = ? ORDER BY seq", (memory_id,)):
        try:
            record = Record.from_wire(json.loads(hrow["record_json"]))
        except (SealmemError, ValueError):  # a version no longer valid cannot come back
            continue
        seq = hrow["snapshot_seq"]
        out.append((Held(record, None if seq is None else int(seq)), hrow))
    return out


def _plan(rows: Iterable[sqlite3.Row], conn: sqlite3.Connection, rule: DropRule) -> list[_Step]:
    steps: list[_Step] = []
    for row in rows:
        winner = _held(row)
        if not rule.drops(winner):
            continue
        history = _history(conn, winner.record.id)
        best = rule.best([winner, *(h for h, _ in history)])
        source = None if best is None else next(r for h, r in history if h is best)
        steps.append(_Step(row, None if best is None else best.record, source))
    return steps


def _apply(conn: sqlite3.Connection, steps: list[_Step], now: int) -> Dropped:
    result = Dropped()
    removed, writes, unkept = [], [], []
    for step in steps:
        result.ids.append(step.row["id"])
        if step.best is None or step.source is None:
            removed.append(step.row)
            continue
        src = step.source
        importance = max(float(src["local_importance"]), step.best.importance)
        seen = int(step.row["seen_count"])
        writes.append(Write(step.best, provenance_of(src), importance, seen, now, step.row))
        unkept.append(int(src["seq"]))  # it is the winner now
    batch = Batch(writes=writes, removed=removed, unkept=unkept, replaced_at=now)
    result.purged = write(conn, batch).purged
    result.removed, result.restored = len(removed), len(writes)
    return result


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
    ``rewound`` lists the chain heads forgotten because they were past a pin.
    """
    applied = int(get_meta(conn, _APPLIED_KEY) or 0)
    if applied >= len(roster.revocations):
        return Dropped()
    result = Dropped()
    projects = {p for (p,) in conn.execute("SELECT DISTINCT project FROM memories")}
    for project in sorted(projects):
        rule = drop_rule(roster, project, me, now)
        if not rule.editors:
            continue
        rows = _pulled_by(conn, project, rule.editors)
        result.add(_apply(conn, _plan(rows, conn, rule), now))
    for writer, project in heads_past_pins(roster, replica.load_heads(conn), me):
        replica.forget_head(conn, writer, project)
        result.rewound.append((writer, project))
    set_meta(conn, _APPLIED_KEY, str(len(roster.revocations)))
    return result


def _pulled_from(conn: sqlite3.Connection, kids: Collection[str]) -> list[sqlite3.Row]:
    marks = ",".join("?" * len(kids))
    return conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE editor IN ({marks}) "
        "AND transport != 'local' ORDER BY id",
        sorted(kids),
    ).fetchall()


def drop_writer(conn: sqlite3.Connection, kid: str, now: int) -> Dropped:
    """Drop every pulled version of ``kid`` here (a person's purge of a muted member): what
    :func:`preview_writer` shows, written; the versions of others come back."""
    with transaction(conn):
        result = _apply(
            conn, _plan(_pulled_from(conn, (kid,)), conn, DropRule(now, frozenset((kid,)))), now
        )
    if result.purged:
        scrub.settle(conn)
    return result


def preview_writer(
    conn: sqlite3.Connection, kids: Collection[str], now: int | None = None
) -> Dropped:
    """What dropping every pulled version of the writers ``kids`` (a member's devices)
    would do here (nothing is written); ``now`` (default: this machine's clock) bounds the
    versions that may come back."""
    rows = _pulled_from(conn, kids)
    rule = DropRule(now_ms() if now is None else now, frozenset(kids))
    steps = _plan(rows, conn, rule)
    removed = sum(step.best is None for step in steps)
    return Dropped(len(steps) - removed, removed, [step.row["id"] for step in steps])


def _drop_pulled_ahead(
    conn: sqlite3.Connection, roster: Roster | None, me: str, now: int
) -> Dropped:
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE hlc_wall > ? AND transport != 'local' "
        "ORDER BY project, id",
        (now + MAX_AHEAD_MS,),
    ).fetchall()
    result = Dropped()
    for project in sorted({str(r["project"]) for r in rows}):
        rule = drop_rule(roster, project, me, now)
        mine = [r for r in rows if r["project"] == project]
        result.add(_apply(conn, _plan(mine, conn, rule), now))
    return result


def _restamp_own(conn: sqlite3.Connection, me: str, now: int) -> tuple[int, int]:
    """Stamp this store's own far-ahead winners again from the store clock (oldest first,
    so they keep their order); the far-ahead version goes to history.  Returns how many,
    and how many versions with content the restamped tombstones erased."""
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE hlc_wall > ? AND transport = 'local' "
        "ORDER BY hlc_wall, hlc_counter, id",
        (now + MAX_AHEAD_MS,),
    ).fetchall()
    purged = 0
    for row in rows:
        held = [h.record.hlc for h, _ in _history(conn, str(row["id"]))]
        record, clock = restamp(record_from_row(row), read_hlc(conn), held, me=me, now_ms=now)
        purged += write_version(
            conn,
            record,
            provenance=Provenance.local(),
            local_importance=float(row["local_importance"]),
            seen_count=int(row["seen_count"]),
            updated_at=now,
        )
        save_hlc(conn, clock)
    return len(rows), purged


def drop_far_ahead(
    conn: sqlite3.Connection,
    now: int,
    *,
    me: str,
    roster: Roster | None = None,
    check_all: bool = False,
) -> Dropped:
    """Drop pulled winners more than ``MAX_AHEAD_MS`` ahead of ``now``; fix the store clock;
    stamp again (as ``me``) the winners this store wrote while its clock was that far ahead.

    ``roster`` (the trusted one; None for a store in no team) gives the rest of the
    drop rule, so that no version a revocation dropped comes back as the best
    remaining one.  The store clock is never behind a version it holds, so a clock
    within bounds means there is nothing to do: a sync checks only that, unless
    ``check_all`` (``sealmem doctor``).
    """
    clock = read_hlc(conn)
    if not check_all and not too_far_ahead(clock, now):
        return Dropped()
    result = _drop_pulled_ahead(conn, roster, me, now)
    top = conn.execute(
        "SELECT hlc_wall, hlc_counter FROM memories WHERE hlc_wall <= ? "
        "ORDER BY hlc_wall DESC, hlc_counter DESC LIMIT 1",
        (now + MAX_AHEAD_MS,),
    ).fetchone()
    fixed = recovered_clock(clock, [] if top is None else [Hlc(int(top[0]), int(top[1]))], now)
    if fixed is not None:
        save_hlc(conn, fixed)
        replica.rewind_pushed(conn, fixed)  # else the push skips what is stamped again
    result.restamped, purged = _restamp_own(conn, me, now)
    result.purged += purged
    if fixed is not None or result.restamped:
        result.clock = read_hlc(conn)
        result.still_ahead = too_far_ahead(result.clock, now)
    return result


def clock_check(
    conn: sqlite3.Connection, now: int, *, me: str, roster: Roster | None = None
) -> Check:
    """``sealmem doctor``: look for far-ahead versions and clock in the whole store; mend them."""
    with transaction(conn):
        done = drop_far_ahead(conn, now, me=me, roster=roster, check_all=True)
    if done.purged:
        scrub.settle(conn)
    if not done.affected and done.clock is None:
        return Check("clock", True, "no version and not the store clock is more than 2 days ahead")
    parts = []
    if done.affected:
        parts.append(
            f"dropped {done.affected} pulled versions dated more than 2 days ahead "
            f"({done.restored} memories back to an earlier version, {done.removed} "
            "moved to history)"
        )
    if done.restamped:
        parts.append(
            f"stamped {done.restamped} of your memories written while the clock was ahead "
            "with the current time (the next sync publishes them)"
        )
    if done.clock is not None and not done.still_ahead:
        parts.append(f"brought the store clock back to {done.clock.wall}:{done.clock.counter}")
    elif done.clock is not None:
        return Check(
            "clock",
            False,
            "; ".join(parts) + f"; the store clock is still at {done.clock.wall} ms, more "
            "than 2 days ahead of this machine: check the system clock, then run "
            "'sealmem doctor' again",
        )
    return Check("clock", True, "repaired: " + "; ".join(parts))
