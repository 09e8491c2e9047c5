"""Hub metadata in PostgreSQL (``--db postgresql://...``), for several stateless replicas.

Nothing that matters lives in one process: every replica reads and writes the
same rows, so compare-and-swap, quotas, nonces, rate limits, the per-team
change cursor and the team's generation hold across replicas.  Blobs live in
the blob store given beside it (an S3-compatible bucket, typically).

- :meth:`PgStorage.write` is a transaction holding the team's advisory lock
  (:func:`~sealmem.hub.pg_write.lock_team`), the lock every replica takes to
  verify-and-write that team; see :mod:`sealmem.hub.pg_write` for the
  compare-and-swaps inside it.
- Chunk rows are added and removed under the same lock, so a quota check and
  the usage it guards are one decision, and a chunk cannot vanish between a
  manifest's "all chunks held" check and its commit.
- Nonces are rows with a unique key: a replay sent to another replica inside
  the window is refused, and a restart forgets nothing.
- Rate-limit buckets are rows updated in one statement each.
- Wake-ups go through LISTEN/NOTIFY (:class:`~sealmem.hub.pg_feed.PgFeed`).

Connections, transactions and error translation are :mod:`sealmem.hub.pg_db`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from . import (
    TEAM_OWNER,
    Admission,
    Change,
    KeyringBlob,
    PendingRequest,
    Quota,
    Storage,
    StoredHead,
    TeamWrite,
)
from .blobs import BlobKey, BlobStore
from .feed import Feed
from .pg_db import Database, redact
from .pg_feed import PgFeed
from .pg_write import PgTeamWrite, charge, read_heads

__all__ = ["PgStorage", "redact"]

_NEVER = -(2**63)
_NONCE_PURGE_MS = 60_000
#: a rate-limit bucket untouched this long has refilled (every hub rate refills its
#: burst within minutes): its row is deleted, which is the same as a full bucket
BUCKET_IDLE_MS = 60 * 60 * 1000


class PgStorage(Storage):
    """See the module docstring.  Any number of instances (replicas) per database."""

    def __init__(
        self, dsn: str, blobs: BlobStore, quota: Quota | None = None, *, pool_size: int = 16
    ) -> None:
        super().__init__(blobs, quota)
        self._db = Database(dsn, pool_size=pool_size)
        self.where = self._db.where
        self._feed = PgFeed(dsn)
        self._next_purge = 0
        self._next_bucket_purge = 0

    # -- plumbing --------------------------------------------------------------------

    def _tx(self, *lock: str) -> contextlib.AbstractContextManager[Any]:
        return self._db.tx(*lock)

    def _read(
        self, sql: str, args: Sequence[object] | Mapping[str, object] = ()
    ) -> list[tuple[Any, ...]]:
        return self._db.read(sql, args)

    def close(self) -> None:
        self._db.close()
        super().close()

    def feed(self) -> Feed:
        return self._feed

    # -- teams, rosters, keyrings ----------------------------------------------------

    def team_exists(self, team: str) -> bool:
        return bool(self._read("SELECT 1 FROM teams WHERE team = %s", (team,)))

    def team_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM teams")[0][0])

    def generation(self, team: str) -> int | None:
        rows = self._read("SELECT generation FROM teams WHERE team = %s", (team,))
        return int(rows[0][0]) if rows else None

    @contextlib.contextmanager
    def write(self, team: str) -> Iterator[TeamWrite]:
        with self._tx(team) as conn:
            yield PgTeamWrite(conn, team, self.quota)

    def rosters(self, team: str, after_version: int) -> list[bytes]:
        rows = self._read(
            "SELECT data FROM rosters WHERE team = %s AND version > %s ORDER BY version",
            (team, after_version),
        )
        return [bytes(r[0]) for r in rows]

    def keyrings(self, team: str, project: str | None = None) -> list[KeyringBlob]:
        sql = "SELECT project, epoch, data, roster_version FROM keyrings WHERE team = %s"
        if project is None:
            rows = self._read(sql + " ORDER BY project, epoch", (team,))
        else:
            rows = self._read(sql + " AND project = %s ORDER BY epoch", (team, project))
        return [KeyringBlob(str(p), int(e), bytes(d), int(v)) for p, e, d, v in rows]

    def keys_of(self, kid: str) -> list[tuple[str, bytes]]:
        rows = self._read("SELECT team, sign_public FROM members WHERE kid = %s", (kid,))
        return [(str(t), bytes(p)) for t, p in rows]

    # -- manifests -------------------------------------------------------------------

    def heads(self, team: str) -> list[StoredHead]:
        with self._db.reading() as conn:
            return read_heads(conn, team)

    def manifests(
        self, team: str, project: str, writer: str | None = None
    ) -> dict[str, list[bytes]]:
        if writer is None:
            rows = self._read(
                "SELECT writer, data FROM manifests WHERE team = %s AND project = %s "
                "ORDER BY writer, seq DESC",
                (team, project),
            )
        else:
            rows = self._read(
                "SELECT writer, data FROM manifests WHERE team = %s AND project = %s "
                "AND writer = %s ORDER BY seq DESC",
                (team, project, writer),
            )
        out: dict[str, list[bytes]] = {}
        for w, data in rows:
            out.setdefault(str(w), []).append(bytes(data))
        return out

    def newest_seqs(self, team: str, project: str) -> dict[str, int]:
        rows = self._read(
            "SELECT writer, MAX(seq) FROM manifests WHERE team = %s AND project = %s "
            "GROUP BY writer",
            (team, project),
        )
        return {str(w): int(s) for w, s in rows}

    # -- usage -----------------------------------------------------------------------

    def usage(self, team: str) -> int:
        rows = self._read("SELECT COALESCE(SUM(bytes), 0) FROM usage WHERE team = %s", (team,))
        return int(rows[0][0])

    def member_usage(self, team: str, member: str) -> int:
        rows = self._read("SELECT bytes FROM usage WHERE team = %s AND member = %s", (team, member))
        return int(rows[0][0]) if rows else 0

    def total_usage(self) -> int:
        return int(self._read("SELECT COALESCE(SUM(bytes), 0) FROM usage")[0][0])

    # -- join requests ---------------------------------------------------------------

    def offer_request(
        self,
        team: str,
        kid: str,
        data: bytes,
        address: str,
        now_ms: int,
        *,
        live_after_ms: int,
        max_pending: int,
        max_per_address: int,
    ) -> Admission:
        with self._tx(team) as conn:  # the team lock: the inbox limits hold across replicas
            expired = conn.execute(
                "DELETE FROM requests WHERE team = %s AND stored_at <= %s "
                "RETURNING octet_length(data)",
                (team, live_after_ms),
            ).fetchall()
            charge(conn, None, team, TEAM_OWNER, -sum(int(n) for (n,) in expired))
            pending, from_address, oldest = conn.execute(
                "SELECT COUNT(*), COUNT(*) FILTER (WHERE address = %s), MIN(stored_at) "
                "FROM requests WHERE team = %s AND kid <> %s",
                (address, team, kid),
            ).fetchone()
            old = conn.execute(
                "SELECT octet_length(data) FROM requests WHERE team = %s AND kid = %s",
                (team, kid),
            ).fetchone()
            oldest_at = None if oldest is None else int(oldest)
            if old is None and (pending >= max_pending or from_address >= max_per_address):
                return Admission(False, int(pending), int(from_address), oldest_at)
            conn.execute(
                "INSERT INTO requests (team, kid, data, stored_at, address) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (team, kid) DO UPDATE SET "
                "data = excluded.data, stored_at = excluded.stored_at, address = excluded.address",
                (team, kid, data, now_ms, address),
            )
            # anyone may post: like data, a request stops short of the reserve
            charge(conn, self.quota, team, TEAM_OWNER, len(data) - (int(old[0]) if old else 0))
        oldest_at = now_ms if oldest_at is None else min(oldest_at, now_ms)
        return Admission(True, int(pending) + 1, int(from_address) + 1, oldest_at)

    def request(self, team: str, kid: str, live_after_ms: int | None = None) -> bytes | None:
        rows = self._read(
            "SELECT data FROM requests WHERE team = %s AND kid = %s AND stored_at > %s",
            (team, kid, _NEVER if live_after_ms is None else live_after_ms),
        )
        return bytes(rows[0][0]) if rows else None

    def requests(self, team: str, live_after_ms: int | None = None) -> list[PendingRequest]:
        rows = self._read(
            "SELECT kid, data, stored_at FROM requests WHERE team = %s AND stored_at > %s "
            "ORDER BY kid",
            (team, _NEVER if live_after_ms is None else live_after_ms),
        )
        return [PendingRequest(str(k), bytes(d), int(t)) for k, d, t in rows]

    def remove_request(self, team: str, kid: str) -> bool:
        with self._tx(team) as conn:
            gone = conn.execute(
                "DELETE FROM requests WHERE team = %s AND kid = %s RETURNING octet_length(data)",
                (team, kid),
            ).fetchone()
            if gone is None:
                return False
            charge(conn, None, team, TEAM_OWNER, -int(gone[0]))
        return True

    # -- change feed -----------------------------------------------------------------

    def changes(self, team: str, since: int, limit: int = 1000) -> list[Change]:
        rows = self._read(
            "SELECT cursor, kind, project, writer, seq FROM changes WHERE team = %s "
            "AND cursor > %s ORDER BY cursor LIMIT %s",
            (team, since, limit),
        )
        return [
            Change(int(c), str(k), p, w, None if s is None else int(s)) for c, k, p, w, s in rows
        ]

    def cursor(self, team: str) -> int:
        rows = self._read("SELECT cursor FROM teams WHERE team = %s", (team,))
        return int(rows[0][0]) if rows else 0

    # -- state shared by replicas ----------------------------------------------------

    def remember_nonce(self, kid: str, nonce: str, expires_ms: int, now_ms: int) -> bool:
        with self._tx() as conn:
            if now_ms >= self._next_purge:
                conn.execute("DELETE FROM nonces WHERE expires_ms <= %s", (now_ms,))
                self._next_purge = now_ms + _NONCE_PURGE_MS
            cur = conn.execute(
                "INSERT INTO nonces (kid, nonce, expires_ms) VALUES (%s, %s, %s) "
                "ON CONFLICT (kid, nonce) DO UPDATE SET expires_ms = excluded.expires_ms "
                "WHERE nonces.expires_ms <= %s",
                (kid, nonce, expires_ms, now_ms),
            )
            return bool(cur.rowcount)

    def take_token(self, key: str, rate_per_s: float, burst: int, now_ms: int) -> float:
        args = {"k": key, "burst": float(burst), "now": now_ms, "rate": rate_per_s / 1000.0}
        refill = "LEAST(%(burst)s, b.tokens + GREATEST(0, %(now)s - b.at_ms) * %(rate)s)"
        with self._tx() as conn:
            if now_ms >= self._next_bucket_purge:
                conn.execute(
                    "DELETE FROM rate_buckets WHERE at_ms < %s", (now_ms - BUCKET_IDLE_MS,)
                )
                self._next_bucket_purge = now_ms + _NONCE_PURGE_MS
            spent = conn.execute(
                "INSERT INTO rate_buckets AS b (key, tokens, at_ms) "
                "VALUES (%(k)s, %(burst)s - 1, %(now)s) ON CONFLICT (key) DO UPDATE SET "
                f"tokens = {refill} - 1, at_ms = GREATEST(b.at_ms, %(now)s) "
                f"WHERE {refill} >= 1 RETURNING tokens",
                args,
            ).fetchone()
            if spent is not None:
                return 0.0
            tokens, at_ms = conn.execute(
                "SELECT tokens, at_ms FROM rate_buckets WHERE key = %s", (key,)
            ).fetchone()
        have = min(float(burst), float(tokens) + max(0, now_ms - int(at_ms)) * rate_per_s / 1000)
        return max((1.0 - have) / rate_per_s, 0.001)

    # -- chunk rows ------------------------------------------------------------------

    def missing_chunks(self, team: str, project: str, writer: str, ids: Iterable[str]) -> list[str]:
        wanted = sorted(set(ids))
        if not wanted:
            return []
        rows = self._read(
            "SELECT id FROM chunks WHERE team = %s AND project = %s AND writer = %s "
            "AND id = ANY(%s)",
            (team, project, writer, wanted),
        )
        have = {str(r[0]) for r in rows}
        return [i for i in wanted if i not in have]

    def chunk_row_add(self, key: BlobKey, size: int, now_ms: int) -> bool:
        with self._tx(key.team) as conn:
            again = conn.execute(
                "UPDATE chunks SET stored_at = GREATEST(stored_at, %s) "
                "WHERE team = %s AND project = %s AND writer = %s AND id = %s",
                (now_ms, *key.parts()),
            )
            if again.rowcount:
                return False
            charge(conn, self.quota, key.team, key.writer, size)
            conn.execute(
                "INSERT INTO chunks (team, project, writer, id, size, stored_at) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                (*key.parts(), size, now_ms),
            )
            return True

    def chunk_rows(self, after: BlobKey | None, limit: int) -> list[tuple[BlobKey, int]]:
        start = after.parts() if after is not None else ("", "", "", "")
        rows = self._read(
            "SELECT team, project, writer, id, size FROM chunks "
            "WHERE (team, project, writer, id) > (%s, %s, %s, %s) "
            "ORDER BY team, project, writer, id LIMIT %s",
            (*start, limit),
        )
        return [(BlobKey(str(t), str(p), str(w), str(i)), int(n)) for t, p, w, i, n in rows]

    def chunk_rows_named(self, keys: Sequence[BlobKey]) -> set[BlobKey]:
        if not keys:
            return set()
        rows = self._read(
            "SELECT c.team, c.project, c.writer, c.id FROM chunks c JOIN "
            "unnest(%s::text[], %s::text[], %s::text[], %s::text[]) "
            "AS k(team, project, writer, id) "
            "ON c.team = k.team AND c.project = k.project AND c.writer = k.writer AND c.id = k.id",
            tuple(list(col) for col in zip(*(k.parts() for k in keys), strict=True)),
        )
        return {BlobKey(str(t), str(p), str(w), str(i)) for t, p, w, i in rows}

    def chunk_rows_of_writer(
        self, team: str, project: str, writer: str, stored_before_ms: int
    ) -> list[str]:
        rows = self._read(
            "SELECT id FROM chunks WHERE team = %s AND project = %s AND writer = %s "
            "AND stored_at < %s",
            (team, project, writer, stored_before_ms),
        )
        return [str(r[0]) for r in rows]

    def chunk_rows_unreferenced(
        self,
        stored_before_ms: int,
        *,
        team: str | None = None,
        writer: str | None = None,
        limit: int = 500,
    ) -> list[BlobKey]:
        rows = self._read(
            "SELECT c.team, c.project, c.writer, c.id FROM chunks c "
            "WHERE c.stored_at < %(before)s AND (%(team)s::text IS NULL OR c.team = %(team)s) "
            "AND (%(writer)s::text IS NULL OR c.writer = %(writer)s) "
            "AND NOT EXISTS (SELECT 1 FROM manifest_chunks r WHERE r.team = c.team AND "
            "r.project = c.project AND r.writer = c.writer AND r.id = c.id) LIMIT %(limit)s",
            {"before": stored_before_ms, "team": team, "writer": writer, "limit": limit},
        )
        return [BlobKey(str(t), str(p), str(w), str(i)) for t, p, w, i in rows]

    def chunk_rows_remove(
        self, keys: Sequence[BlobKey], *, stored_before_ms: int, unreferenced: bool
    ) -> list[BlobKey]:
        gone: list[BlobKey] = []
        if not keys:
            return gone
        with self._tx(*(k.team for k in keys)) as conn:
            for key in keys:
                row = conn.execute(
                    "DELETE FROM chunks c WHERE team = %s AND project = %s AND writer = %s "
                    "AND id = %s AND stored_at < %s AND (NOT %s OR NOT EXISTS ("
                    "SELECT 1 FROM manifest_chunks r WHERE r.team = c.team AND "
                    "r.project = c.project AND r.writer = c.writer AND r.id = c.id)) "
                    "RETURNING size",
                    (*key.parts(), stored_before_ms, unreferenced),
                ).fetchone()
                if row is not None:
                    charge(conn, None, key.team, key.writer, -int(row[0]))
                    gone.append(key)
        return gone
