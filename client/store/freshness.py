"""Staleness: when a memory was last confirmed, and whether no one has for a period.

A memory is *confirmed* when a version of it is written (written, edited, corrected,
re-remembered by anyone: the version's signed clock, ``hlc_wall``), re-remembered here
(a repeat that changes nothing raises ``seen_count`` and ``updated_at``), accepted by
this reader (a verdict), kept in review (``sealmem review keep``) or recalled here.  The
last two are this reader's own, in the ``freshness`` table (migration 8), never synced.
A memory whose last confirmation is older than the review period is *stale*: recall
and the viewer mark it, ``sealmem review`` offers it; nothing is ever deleted for it.

The period is the team's (``stale_days`` in the roster, set by an admin) unless the
person set their own on this machine; :mod:`.periods` says which applies (default 180
days).

*Recalled* means shown, as an answer to a query, to a person or an agent: what
``sealmem recall`` prints, what MCP ``recall`` returns (each group's leader and its
near-duplicates, related ones too: they were shown), what the prompt hook injects into
the agent's prompt (matches only: it injects nothing else), and what the viewer's
search page shows.  Not recalled: the startup context (chosen by kind and importance,
not asked for; counting it would keep every important memory fresh forever), lists,
the timeline, and the check for a repeat before a capture (nothing is shown).
Each surface notes what it showed through :func:`note_recalled`, which writes only
when a memory's recorded recall is a day old or more (one write a day per memory at
most, :func:`recall_due` says which without writing), after it answered where it can
(the CLI, MCP and the viewer; the hook writes before it prints, at most once a day
per memory).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .memory import Memory
from .rows import MEMORY_COLUMNS, memory_from_row

__all__ = [
    "DAY_MS",
    "NONE",
    "Seen",
    "confirmed_at",
    "is_stale",
    "keep",
    "note_recalled",
    "seen",
    "stale_memories",
]

DAY_MS = 86_400_000


@dataclass(frozen=True)
class Seen:
    """This reader's own marks on one memory: last recalled, last kept, last accepted."""

    recalled_at: int | None = None
    kept_at: int | None = None
    accepted_at: int | None = None


NONE = Seen()
"""No marks of this reader's: the memory's own times alone."""


def confirmed_at(memory: Memory, seen: Seen) -> int:
    """When ``memory`` was last confirmed (see the module doc), ms since the epoch."""
    rec = memory.record
    times = [rec.created_at, rec.hlc[0], seen.recalled_at, seen.kept_at, seen.accepted_at]
    if memory.seen_count > 1:  # re-remembered: the repeat's local time
        times.append(memory.updated_at)
    return max(t for t in times if t is not None)


def is_stale(memory: Memory, seen: Seen, now: int, days: int) -> bool:
    """No one confirmed ``memory`` in the last ``days`` days (a tombstone never is)."""
    return not memory.deleted and now - confirmed_at(memory, seen) > days * DAY_MS


def seen(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, Seen]:
    """This reader's marks on each of ``ids`` that has any (two indexed reads)."""
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    found: dict[str, list[int | None]] = {}
    for row in conn.execute(
        f"SELECT id, recalled_at, kept_at FROM freshness WHERE id IN ({marks})", list(ids)
    ):
        found[row[0]] = [row[1], row[2], None]
    for row in conn.execute(
        f"SELECT id, MAX(decided_at) FROM verdicts WHERE verdict = 'accepted' AND id IN ({marks}) "
        "GROUP BY id",
        list(ids),
    ):
        found.setdefault(row[0], [None, None, None])[2] = row[1]
    return {i: Seen(*v) for i, v in found.items()}


def recall_due(marks: dict[str, Seen], ids: Iterable[str], now: int) -> list[str]:
    """Those of ``ids`` whose recorded recall is missing or a day old: what
    :func:`note_recalled` would write."""
    due = []
    for i in ids:
        at = marks[i].recalled_at if i in marks else None
        if at is None or now - at >= DAY_MS:
            due.append(i)
    return due


def note_recalled(conn: sqlite3.Connection, ids: Sequence[str], now: int) -> int:
    """Record that ``ids`` were recalled at ``now``; a memory recalled less than a day
    before is left as it is.  Returns how many rows were written."""
    if not ids:
        return 0
    with conn:
        cur = conn.executemany(
            "INSERT INTO freshness (id, recalled_at) VALUES (?, ?) ON CONFLICT (id) DO UPDATE "
            "SET recalled_at = excluded.recalled_at WHERE recalled_at IS NULL "
            f"OR recalled_at <= excluded.recalled_at - {DAY_MS}",
            [(i, now) for i in ids],
        )
    return cur.rowcount


def keep(conn: sqlite3.Connection, memory_id: str, now: int) -> None:
    """``review keep``: this reader confirms the memory now (its clock starts again)."""
    with conn:
        conn.execute(
            "INSERT INTO freshness (id, kept_at) VALUES (?, ?) "
            "ON CONFLICT (id) DO UPDATE SET kept_at = excluded.kept_at",
            (memory_id, now),
        )


def stale_memories(
    conn: sqlite3.Connection, scope: Sequence[str] | None, now: int, days: int
) -> list[tuple[Memory, int]]:
    """Live memories in ``scope`` (None: every project) no one confirmed in ``days``
    days and no live memory supersedes, with their last confirmation, oldest first."""
    cutoff = now - days * DAY_MS
    where = "deleted = 0 AND hlc_wall < ? AND created_at < ?"
    where += " AND NOT EXISTS (SELECT 1 FROM supersedes s WHERE s.old_id = memories.id)"
    params: list[object] = [cutoff, cutoff]
    if scope is not None:
        where += f" AND project IN ({', '.join('?' * len(scope))})"
        params.extend(scope)
    rows = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where}", params)
    old = [memory_from_row(r) for r in rows]
    marks: dict[str, Seen] = {}
    for start in range(0, len(old), 500):
        marks.update(seen(conn, [m.id for m in old[start : start + 500]]))
    out = []
    for memory in old:
        mark = marks.get(memory.id, Seen())
        if is_stale(memory, mark, now, days):
            out.append((memory, confirmed_at(memory, mark)))
    return sorted(out, key=lambda pair: (pair[1], pair[0].record.hlc, pair[0].id))
