"""The sync engine's view of the local store: trusted team state, pulled versions, own chain.

Everything here runs on the store's connection (``MemoryStore.connection``),
inside the caller's transaction, so that a pull's accepted chain heads and the
versions it merged are committed together or not at all.

- Trusted rosters and keyrings are kept as the signed envelopes that were
  accepted; :func:`load_state` replays them through the verifier, so a state
  read back from disk is checked again, not believed.
- :func:`chunk_cache` and :func:`save_head` keep, per (writer, project), the
  accepted chain head and which chunks were opened (pulled versions themselves
  are merged by :mod:`sealmem.client.sync.apply`).
- :func:`publishable_records` reads the versions this member's next snapshot
  carries: team winners it edited, never private ones.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...protocol.hlc import ZERO, Hlc, pack, unpack
from ...protocol.record import Record
from ...protocol.state import ChainHead, TrustedState, Witness
from ...protocol.suite import Suite
from ...protocol.verify import accept_keyring, accept_roster
from ..store import derived
from ..store.rows import RECORD_COLUMNS, record_from_values

__all__ = [
    "PUBLISHABLE",
    "OwnChain",
    "chunk_cache",
    "claim_pushes",
    "forget_head",
    "holes",
    "last_run",
    "load_heads",
    "load_own_chain",
    "load_state",
    "log_refusal",
    "own_summary",
    "own_team_counts",
    "publishable_records",
    "pushes_as",
    "recent_refusals",
    "record_run",
    "rewind_pushed",
    "save_head",
    "save_keyring",
    "save_own_chain",
    "save_roster",
    "save_witnessed",
]


# -- trusted state ---------------------------------------------------------------


def save_roster(conn: sqlite3.Connection, version: int, data: bytes, now: int) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO team_objects (kind, name, data, accepted_at) VALUES (?, ?, ?, ?)",
        ("roster", f"{version:010d}", data, now),
    )


def save_keyring(conn: sqlite3.Connection, project: str, epoch: int, data: bytes, now: int) -> None:
    """Keep the accepted keyring of (project, epoch), replacing an older one it updates."""
    conn.execute(
        "INSERT OR REPLACE INTO team_objects (kind, name, data, accepted_at) VALUES (?, ?, ?, ?)",
        ("keyring", f"{project}/{epoch:010d}", data, now),
    )


def load_state(
    conn: sqlite3.Connection, suite: Suite, team: str, root_public: bytes
) -> TrustedState:
    """The trusted state of this store, re-verified from the accepted envelopes."""
    state = TrustedState.pin(suite, team, root_public)
    for (data,) in conn.execute(
        "SELECT data FROM team_objects WHERE kind = 'roster' ORDER BY name"
    ):
        state, _ = accept_roster(suite, state, bytes(data))
    for (data,) in conn.execute(
        "SELECT data FROM team_objects WHERE kind = 'keyring' ORDER BY name"
    ):
        state, _ = accept_keyring(suite, state, bytes(data))
    witnessed = {
        (str(r[0]), str(r[1])): Witness(int(r[2]), str(r[3]), str(r[4]))
        for r in conn.execute("SELECT writer, project, seq, hash, by FROM witnessed")
    }
    return state.evolve(heads=load_heads(conn), witnessed=witnessed)


def load_heads(conn: sqlite3.Connection) -> dict[tuple[str, str], ChainHead]:
    """The accepted chain head of every (writer, project)."""
    return {
        (str(r[0]), str(r[1])): ChainHead(int(r[2]), str(r[3]), int(r[4]))
        for r in conn.execute("SELECT writer, project, seq, hash, reset_at FROM chain_heads")
    }


def chunk_cache(conn: sqlite3.Connection, writer: str, project: str) -> dict[str, int]:
    """Chunks of the last opened manifest of (writer, project): ``"epoch:buckets:bucket:id"``
    -> record count.  A chunk listed again under the same key need not be fetched again."""
    value = _cache_json(conn, writer, project)
    try:  # a damaged cache only costs fetching those chunks again
        return {str(k): int(v) for k, v in value.items() if k != _HOLES}
    except (TypeError, ValueError):
        return {}


_HOLES = "holes"  # the chunks_json key of the holes (an older sealmem drops the cache)


def holes(conn: sqlite3.Connection, writer: str, project: str) -> list[str]:
    """The chunk ids of (writer, project)'s accepted manifest that could not be read (the
    snapshot was read in part, SPEC "Partial reads"): tried again at each pull."""
    try:  # read by SQLite: the quiet sync asks for every writer, the cache may be large
        row = conn.execute(
            f"SELECT json_extract(chunks_json, '$.{_HOLES}') FROM chain_heads "
            "WHERE writer = ? AND project = ?",
            (writer, project),
        ).fetchone()
        found = json.loads(row[0]) if row is not None and row[0] is not None else []
    except (sqlite3.OperationalError, TypeError, ValueError):  # a damaged cache: none
        return []
    return [str(c) for c in found if isinstance(c, str)] if isinstance(found, list) else []


def _cache_json(conn: sqlite3.Connection, writer: str, project: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT chunks_json FROM chain_heads WHERE writer = ? AND project = ?", (writer, project)
    ).fetchone()
    if row is None:
        return {}
    try:
        value = json.loads(row[0])
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def save_head(
    conn: sqlite3.Connection,
    writer: str,
    project: str,
    head: ChainHead,
    *,
    epoch: int,
    buckets: int,
    chunks: Mapping[str, int],
    records: int,
    created_at: int,
    now: int,
    missing: Sequence[str] = (),
) -> None:
    """Record the accepted head, its chunk cache, and ``missing``: its holes (chunk ids)."""
    cache: dict[str, Any] = dict(chunks)
    if missing:
        cache[_HOLES] = sorted(missing)
    conn.execute(
        "INSERT INTO chain_heads (writer, project, seq, hash, reset_at, epoch, buckets, "
        "chunks_json, records, created_at, accepted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (writer, project) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "
        "reset_at = excluded.reset_at, epoch = excluded.epoch, buckets = excluded.buckets, "
        "chunks_json = excluded.chunks_json, records = excluded.records, "
        "created_at = excluded.created_at, accepted_at = excluded.accepted_at",
        (
            writer,
            project,
            head.seq,
            head.hash,
            head.reset_at,
            epoch,
            buckets,
            json.dumps(cache, sort_keys=True),
            records,
            created_at,
            now,
        ),
    )


def forget_head(conn: sqlite3.Connection, writer: str, project: str) -> None:
    """Forget the accepted chain head of (writer, project) and its chunk cache: the next
    pull accepts that writer's manifest as if for the first time (what the verifier
    lets through then is the caller's reason to forget, e.g. only a revocation pin)."""
    conn.execute("DELETE FROM chain_heads WHERE writer = ? AND project = ?", (writer, project))


def save_witnessed(conn: sqlite3.Connection, witnessed: Mapping[tuple[str, str], Witness]) -> None:
    conn.executemany(
        "INSERT INTO witnessed (writer, project, seq, hash, by) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (writer, project) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "
        "by = excluded.by",
        [(w, p, x.seq, x.hash, x.by) for (w, p), x in witnessed.items()],
    )


# -- own versions ----------------------------------------------------------------------


PUBLISHABLE = "FROM memories WHERE project = ? AND editor = ? AND visibility = 'team'"


def publishable_records(conn: sqlite3.Connection, me: str, project: str) -> list[Record]:
    """Team winners of ``project`` edited by ``me``, tombstones included, sorted by id."""
    rows = conn.execute(f"SELECT {RECORD_COLUMNS} {PUBLISHABLE} ORDER BY id", (project, me))
    return list(map(record_from_values, rows))


def own_team_counts(
    conn: sqlite3.Connection, me: str, project: str | None = None
) -> dict[str, int]:
    """``{project: n}``: the live team memories (not forgotten, never private ones) whose
    winning version ``me`` wrote, per project (only ``project`` when given).  Read from
    the counters the store keeps (``own_counts``), not counted row by row."""
    sql = "SELECT project, live FROM own_counts WHERE editor = ? AND live > 0"
    args: tuple[str, ...] = (me,)
    if project is not None:
        sql, args = sql + " AND project = ?", (me, project)
    return {str(p): int(n) for p, n in conn.execute(sql, args)}


def pushes_as(conn: sqlite3.Connection) -> str | None:
    """The member this store pushes as (:func:`claim_pushes`), or None: none yet."""
    row = conn.execute("SELECT editor FROM push_editor").fetchone()
    return None if row is None else str(row[0])


def claim_pushes(conn: sqlite3.Connection, me: str) -> bool:
    """Record that this store pushes as ``me`` (``push_editor``), so
    that the dirty log keeps only the rows ``me`` wrote; return True when that changed.

    Writes only on a change (a new store, another member key): then every chain pushed
    before is logged ``*`` (its next push reads every bucket), because the log kept
    another member's rows until now.  Run inside the caller's transaction."""
    before = pushes_as(conn)
    if before == me:
        return False
    if before is not None:
        derived.dirty_everywhere(conn)
    conn.execute("INSERT OR REPLACE INTO push_editor (one, editor) VALUES (1, ?)", (me,))
    return True


def own_summary(
    conn: sqlite3.Connection, me: str, project: str, collect_before: int
) -> tuple[int, Hlc, int]:
    """Publishable versions of ``me`` in ``project``: how many, the newest HLC, and how
    many are tombstones older than ``collect_before`` (wall ms; collected, not published).

    The cost does not grow with the store: the count and the tombstone count come from
    ``own_counts`` (kept by the store's writer), the newest HLC from one index seek, and the due
    tombstones are all tombstones less those newer than ``collect_before`` (a range of the
    tombstones index that holds only the grace period's tombstones)."""
    row = conn.execute(
        "SELECT rows, live FROM own_counts WHERE project = ? AND editor = ?", (project, me)
    ).fetchone()
    if row is None or not row[0]:
        return 0, ZERO, 0
    count, tombstones = int(row[0]), int(row[0]) - int(row[1])
    wall, counter = conn.execute(
        f"SELECT hlc_wall, hlc_counter {PUBLISHABLE} "
        "ORDER BY hlc_wall DESC, hlc_counter DESC LIMIT 1",
        (project, me),
    ).fetchone()
    due = 0
    if tombstones:
        (recent,) = conn.execute(
            "SELECT COUNT(*) FROM memories INDEXED BY memories_own_tombs "
            "WHERE project = ? AND editor = ? AND visibility = 'team' AND deleted = 1 "
            "AND hlc_wall > ?",
            (project, me, collect_before),
        ).fetchone()
        due = tombstones - int(recent)
    return count, Hlc(int(wall), int(counter)), due


@dataclass(frozen=True)
class OwnChain:
    """The last manifest this member published for one project."""

    project: str
    seq: int
    hash: str
    manifest: bytes
    digests: dict[int, str]
    pushed_wall: Hlc
    pushed_count: int
    reset_at: int


def load_own_chain(conn: sqlite3.Connection, project: str) -> OwnChain | None:
    row = conn.execute(
        "SELECT seq, hash, manifest, digests_json, pushed_wall, pushed_count, reset_at "
        "FROM own_chain WHERE project = ?",
        (project,),
    ).fetchone()
    if row is None:
        return None
    digests = {int(k): str(v) for k, v in json.loads(row[3]).items()}
    return OwnChain(
        project, int(row[0]), str(row[1]), bytes(row[2]), digests, unpack(int(row[4])),
        int(row[5]), int(row[6]),
    )  # fmt: skip


def save_own_chain(conn: sqlite3.Connection, chain: OwnChain, now: int) -> None:
    """Record ``chain`` as our head in its project; the sends recorded at or below it are
    its own or older (an interrupted push is told by the seqs above)."""
    conn.execute("DELETE FROM own_sends WHERE project = ? AND seq <= ?", (chain.project, chain.seq))
    conn.execute(
        "INSERT INTO own_chain (project, seq, hash, manifest, digests_json, pushed_wall, "
        "pushed_count, reset_at, pushed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (project) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "
        "manifest = excluded.manifest, digests_json = excluded.digests_json, "
        "pushed_wall = excluded.pushed_wall, pushed_count = excluded.pushed_count, "
        "reset_at = excluded.reset_at, pushed_at = excluded.pushed_at",
        (
            chain.project,
            chain.seq,
            chain.hash,
            chain.manifest,
            json.dumps({str(k): v for k, v in chain.digests.items()}, sort_keys=True),
            pack(chain.pushed_wall),
            chain.pushed_count,
            chain.reset_at,
            now,
        ),
    )


def rewind_pushed(conn: sqlite3.Connection, to: Hlc) -> int:
    """Record every own chain as having published nothing newer than ``to`` (when it says
    more): versions stamped again after ``to`` are then pushed.  Return how many changed."""
    cur = conn.execute(
        "UPDATE own_chain SET pushed_wall = ? WHERE pushed_wall > ?", (pack(to), pack(to))
    )
    return int(cur.rowcount)


# -- refusals and runs -----------------------------------------------------------------


def log_refusal(conn: sqlite3.Connection, now: int, reason: str, obj: str, detail: str) -> None:
    conn.execute(
        "INSERT INTO sync_refusals (at, reason, object, detail) VALUES (?, ?, ?, ?)",
        (now, reason, obj, detail[:1000]),
    )


def recent_refusals(conn: sqlite3.Connection, *, limit: int = 20) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT at, reason, object, detail FROM sync_refusals ORDER BY seq DESC LIMIT ?", (limit,)
    ).fetchall()
    return [{"at": r[0], "reason": r[1], "object": r[2], "detail": r[3]} for r in rows]


def record_run(
    conn: sqlite3.Connection, started: int, finished: int, summary: Mapping[str, Any]
) -> None:
    conn.execute(
        "INSERT INTO sync_runs (started_at, finished_at, summary_json) VALUES (?, ?, ?)",
        (started, finished, json.dumps(dict(summary), sort_keys=True)),
    )
    conn.execute("DELETE FROM sync_runs WHERE seq <= (SELECT MAX(seq) - 100 FROM sync_runs)")


def last_run(conn: sqlite3.Connection) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT started_at, finished_at, summary_json FROM sync_runs ORDER BY seq DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    return {"started_at": row[0], "finished_at": row[1], "summary": json.loads(row[2])}
