"""What this member's next push carries, read so that a push costs what changed.

The store keeps, per memory, its bucket key (``memories.bucket_key``,
:func:`~sealmem.protocol.snapshot.bucket_key`) and logs in ``push_dirty`` the id
of every team row of ours that was written: the store's one writer keeps the log
(:mod:`sealmem.client.store.derived`), so that every write path (local writes,
pulls, forget and purge, drops) logs without knowing it.

A push then (:mod:`sealmem.client.sync.push`), in one transaction:
fills the keys of rows written since the last push (:func:`fill_bucket_keys`),
reads the log (:func:`dirty_since`), and after the plan
(:func:`~sealmem.protocol.push.plan_rebuild`) reads the records of the rebuilt
buckets only (:func:`records_in_buckets`).  Once the transport holds the new
manifest, the log up to what was read is cleared (:func:`clear_dirty`) with the
new chain head.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from ...crypto import SUITE
from ...protocol.record import Record
from ...protocol.snapshot import BUCKET_KEYS, bucket_key
from ..store.derived import EVERY_BUCKET
from ..store.rows import RECORD_COLUMNS, record_from_values

__all__ = [
    "Dirty",
    "clear_dirty",
    "compact_dirty",
    "dirty_since",
    "dirty_upto",
    "drop_unused_dirty",
    "fill_bucket_keys",
    "records_in_buckets",
]

_COMPACT_ABOVE = 10_000  # log rows of one project kept before duplicates are dropped
_OWN = "FROM memories WHERE project = ? AND editor = ? AND visibility = 'team'"
_IN_ONE_QUERY = 4096  # bucket keys listed in one query; above, read every own row


@dataclass(frozen=True, slots=True)
class Dirty:
    """The bucket keys written since the last push, and the log position read."""

    keys: frozenset[int]
    upto: int  # clear the log up to this seq once the push landed (0: nothing read)


def fill_bucket_keys(conn: sqlite3.Connection, project: str) -> int:
    """Give the rows of ``project`` written without a bucket key theirs; return how many."""
    ids = [
        str(row[0])
        for row in conn.execute(
            "SELECT id FROM memories WHERE project = ? AND bucket_key IS NULL", (project,)
        )
    ]
    conn.executemany(
        "UPDATE memories SET bucket_key = ? WHERE id = ?",
        [(bucket_key(SUITE, mid), mid) for mid in ids],
    )
    return len(ids)


def dirty_upto(conn: sqlite3.Connection, project: str) -> int:
    """The log position a push reads up to (0: nothing logged), without reading the log:
    what a push that builds every bucket clears once it landed."""
    row = conn.execute("SELECT MAX(seq) FROM push_dirty WHERE project = ?", (project,)).fetchone()
    return 0 if row is None or row[0] is None else int(row[0])


def dirty_since(conn: sqlite3.Connection, me: str, project: str, now: int, grace_ms: int) -> Dirty:
    """The bucket keys of ``project`` written since the last push, and of our tombstones
    that came due for collection (or stopped being due, the clock moved back) since.

    The keys of logged ids still in the store are read from ``memories.bucket_key`` (filled
    by :func:`fill_bucket_keys` first); only ids gone since (purged, dropped) are hashed."""
    upto = dirty_upto(conn, project)
    if conn.execute(
        "SELECT 1 FROM push_dirty WHERE project = ? AND id = ? LIMIT 1", (project, EVERY_BUCKET)
    ).fetchone():
        return Dirty(frozenset(range(BUCKET_KEYS)), upto)
    found = conn.execute(
        "SELECT DISTINCT d.id, m.bucket_key FROM push_dirty AS d "
        "LEFT JOIN memories AS m ON m.id = d.id WHERE d.project = ? AND d.seq <= ?",
        (project, upto),
    ).fetchall()
    last = conn.execute("SELECT pushed_at FROM own_chain WHERE project = ?", (project,)).fetchone()
    if last is not None:
        low, high = sorted((int(last[0]) - grace_ms, now - grace_ms))
        found += conn.execute(
            f"SELECT id, bucket_key {_OWN} AND deleted = 1 AND hlc_wall > ? AND hlc_wall <= ?",
            (project, me, low, high),
        ).fetchall()
    keys = {bucket_key(SUITE, str(mid)) if key is None else int(key) for mid, key in found}
    return Dirty(frozenset(keys), upto)


def records_in_buckets(
    conn: sqlite3.Connection, me: str, project: str, buckets: Iterable[int], total: int
) -> list[Record]:
    """Our publishable records (team winners we edited, tombstones included) in ``buckets``
    of a ``total``-bucket snapshot, sorted by id."""
    wanted = set(buckets)
    keys = [k for b in sorted(wanted) for k in range(b, BUCKET_KEYS, total)]
    if len(keys) <= _IN_ONE_QUERY:
        rows = conn.execute(
            f"SELECT {RECORD_COLUMNS} {_OWN} AND bucket_key IN (SELECT value FROM json_each(?)) "
            "ORDER BY id",
            (project, me, json.dumps(keys)),
        ).fetchall()
    else:
        rows = [
            row
            for row in conn.execute(
                f"SELECT {RECORD_COLUMNS}, bucket_key {_OWN} ORDER BY id", (project, me)
            )
            if row["bucket_key"] % total in wanted
        ]
    return list(map(record_from_values, rows))


def clear_dirty(conn: sqlite3.Connection, project: str, upto: int) -> None:
    """Forget the log of ``project`` up to ``upto``: a push carried those writes."""
    conn.execute("DELETE FROM push_dirty WHERE project = ? AND seq <= ?", (project, upto))


def compact_dirty(conn: sqlite3.Connection, project: str) -> None:
    """Keep one log row per id of ``project`` once the log grows long (a member that only
    reads logs every pulled version, and a push that finds nothing to publish keeps them)."""
    long = conn.execute(
        "SELECT 1 FROM push_dirty WHERE project = ? LIMIT 1 OFFSET ?", (project, _COMPACT_ABOVE)
    ).fetchone()
    if long is not None:
        conn.execute(
            "DELETE FROM push_dirty WHERE project = ? AND seq NOT IN "
            "(SELECT MAX(seq) FROM push_dirty WHERE project = ? GROUP BY id)",
            (project, project),
        )


def drop_unused_dirty(conn: sqlite3.Connection) -> None:
    """Forget the log of projects this member never pushed to: their first push builds
    every bucket, and the log of a project we only read would otherwise only grow."""
    conn.execute("DELETE FROM push_dirty WHERE project NOT IN (SELECT project FROM own_chain)")
