"""The embedded storage: SQLite (WAL) for metadata over a blob store (a directory).

Layout of the data directory (``--data DIR``, or ``--db sqlite:///DIR/hub.db``)::

    hub.db                                   metadata, objects, change feed
    hub-nonces.db                            the nonce cache (:mod:`sealmem.hub.sqlite_nonces`)
    blobs/{team}/{project}/{writer}/{id}     one encrypted chunk per file (default)
    hub.lock                                 held while a hub serves this database

One process serves a database (``hub.lock``), so rate-limit buckets live in
its memory (:mod:`sealmem.hub.buckets`); everything else that must survive a
restart is in ``hub.db`` and ``hub-nonces.db``.  A team's write lock is SQLite's
own: every write is a ``BEGIN IMMEDIATE`` transaction (:mod:`sealmem.hub.sqlite_db`: connections,
durability).  The schema and its upgraders are in
:mod:`sealmem.hub.sqlite_schema`, a team's write transaction in
:mod:`sealmem.hub.sqlite_write`, the blob ordering rules in
:mod:`sealmem.hub.chunk_rules`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from .blobs import BlobDir
from .blobstore import BlobKey, BlobStore
from .buckets import TokenBuckets
from .sqlite_db import SQLiteDb
from .sqlite_nonces import NonceFile, nonce_file_name
from .sqlite_schema import set_up
from .sqlite_write import SQLiteTeamWrite, charge
from .storage import (
    TEAM_OWNER,
    Admission,
    Change,
    KeyringBlob,
    PendingRequest,
    Quota,
    Runner,
    Storage,
    StorageError,
    StoredHead,
    TeamWrite,
)

__all__ = ["DB_FILE", "LOCK_FILE", "SQLiteStorage"]

DB_FILE = "hub.db"
LOCK_FILE = "hub.lock"
_NEVER = -(2**63)  # an expiry bound no request is posted at or before


class SQLiteStorage(Storage):
    """See the module docstring.  One instance per database and process."""

    local_reads = True  # hub.db in WAL: a read never waits for a writer; nonces never fsync

    def __init__(
        self,
        data_dir: Path,
        blobs: BlobStore | None = None,
        *,
        quota: Quota | None = None,
        db_name: str = DB_FILE,
    ) -> None:
        data_dir = Path(data_dir)
        lock_name = LOCK_FILE if db_name == DB_FILE else f"{db_name}.lock"
        # takes hub.lock; manifests and chunk rows share commits (sqlite_group.py)
        self._sql = SQLiteDb(data_dir / db_name, data_dir / lock_name, grouped=True)
        try:
            self._nonces = NonceFile(data_dir / nonce_file_name(db_name))
        except BaseException:
            self._sql.close()
            raise
        try:
            super().__init__(blobs if blobs is not None else BlobDir(data_dir / "blobs"), quota)
            self._sql.set_up(lambda conn: set_up(conn, self._nonces.adopt))
        except BaseException:
            self._nonces.close()
            self._sql.close()
            raise
        self._buckets = TokenBuckets()

    def close(self) -> None:
        self._nonces.close()
        self._sql.close()
        super().close()

    # -- teams, rosters, keyrings ----------------------------------------------------

    def team_exists(self, team: str) -> bool:
        return bool(self._sql.read("SELECT 1 FROM teams WHERE team = ?", (team,)))

    def team_count(self) -> int:
        return int(self._sql.read("SELECT COUNT(*) FROM teams")[0][0])

    def generation(self, team: str) -> int | None:
        rows = self._sql.read("SELECT generation FROM teams WHERE team = ?", (team,))
        return int(rows[0][0]) if rows else None

    @contextlib.contextmanager
    def write(self, team: str) -> Iterator[TeamWrite]:
        with self._sql.tx(solo=True) as conn:
            yield SQLiteTeamWrite(conn, team, self.quota)

    @contextlib.contextmanager
    def push(self, team: str) -> Iterator[TeamWrite]:
        with self._sql.tx() as conn:  # group commit
            yield SQLiteTeamWrite(conn, team, self.quota)

    def batch_runner(self) -> Runner | None:
        group = self._sql.group
        return group.batch if group is not None else None

    @property
    def commits(self) -> tuple[int, int]:
        """(transactions committed, writes run) on ``hub.db`` since it was opened."""
        group = self._sql.group
        return (group.commits, group.writes) if group is not None else (0, 0)

    def rosters(self, team: str, after_version: int) -> list[bytes]:
        rows = self._sql.read(
            "SELECT data FROM rosters WHERE team = ? AND version > ? ORDER BY version",
            (team, after_version),
        )
        return [bytes(r[0]) for r in rows]

    def keyrings(self, team: str, project: str | None = None) -> list[KeyringBlob]:
        sql = "SELECT project, epoch, data, roster_version FROM keyrings WHERE team = ?"
        if project is None:
            rows = self._sql.read(sql + " ORDER BY project, epoch", (team,))
        else:
            rows = self._sql.read(sql + " AND project = ? ORDER BY epoch", (team, project))
        return [KeyringBlob(str(p), int(e), bytes(d), int(v)) for p, e, d, v in rows]

    def keys_of(self, kid: str) -> list[tuple[str, bytes]]:
        rows = self._sql.read("SELECT team, sign_public FROM members WHERE kid = ?", (kid,))
        return [(str(t), bytes(p)) for t, p in rows]

    # -- manifests -------------------------------------------------------------------

    def heads(self, team: str) -> list[StoredHead]:
        return SQLiteTeamWrite.read_heads(self._sql.conn(), team)

    def manifests(
        self, team: str, project: str, writer: str | None = None
    ) -> dict[str, list[bytes]]:
        if writer is None:
            rows = self._sql.read(
                "SELECT writer, data FROM manifests WHERE team = ? AND project = ? "
                "ORDER BY writer, seq DESC",
                (team, project),
            )
        else:
            rows = self._sql.read(
                "SELECT writer, data FROM manifests WHERE team = ? AND project = ? AND writer = ? "
                "ORDER BY seq DESC",
                (team, project, writer),
            )
        out: dict[str, list[bytes]] = {}
        for w, data in rows:
            out.setdefault(str(w), []).append(bytes(data))
        return out

    def newest_seqs(self, team: str, project: str) -> dict[str, int]:
        rows = self._sql.read(
            "SELECT writer, MAX(seq) FROM manifests WHERE team = ? AND project = ? GROUP BY writer",
            (team, project),
        )
        return {str(w): int(s) for w, s in rows}

    # -- usage -----------------------------------------------------------------------

    def usage(self, team: str) -> int:
        rows = self._sql.read("SELECT COALESCE(SUM(bytes), 0) FROM usage WHERE team = ?", (team,))
        return int(rows[0][0])

    def member_usage(self, team: str, member: str) -> int:
        rows = self._sql.read(
            "SELECT bytes FROM usage WHERE team = ? AND member = ?", (team, member)
        )
        return int(rows[0][0]) if rows else 0

    def total_usage(self) -> int:
        return int(self._sql.read("SELECT COALESCE(SUM(bytes), 0) FROM usage")[0][0])

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
        with self._sql.tx(solo=True) as conn:
            expired = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM requests "
                "WHERE team = ? AND stored_at <= ?",
                (team, live_after_ms),
            ).fetchone()
            if expired[0]:
                conn.execute(
                    "DELETE FROM requests WHERE team = ? AND stored_at <= ?", (team, live_after_ms)
                )
                charge(conn, None, team, TEAM_OWNER, -int(expired[1]))
            pending, from_address, oldest = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(address = ?), 0), MIN(stored_at) FROM requests "
                "WHERE team = ? AND kid != ?",
                (address, team, kid),
            ).fetchone()
            old = conn.execute(
                "SELECT LENGTH(data) FROM requests WHERE team = ? AND kid = ?", (team, kid)
            ).fetchone()
            oldest_at = None if oldest is None else int(oldest)
            if old is None and (pending >= max_pending or from_address >= max_per_address):
                return Admission(False, int(pending), int(from_address), oldest_at)
            conn.execute(
                "INSERT OR REPLACE INTO requests (team, kid, data, stored_at, address) "
                "VALUES (?, ?, ?, ?, ?)",
                (team, kid, data, now_ms, address),
            )
            # anyone may post: like data, a request stops short of the reserve
            charge(conn, self.quota, team, TEAM_OWNER, len(data) - (int(old[0]) if old else 0))
        oldest_at = now_ms if oldest_at is None else min(oldest_at, now_ms)
        return Admission(True, int(pending) + 1, int(from_address) + 1, oldest_at)

    def request(self, team: str, kid: str, live_after_ms: int | None = None) -> bytes | None:
        rows = self._sql.read(
            "SELECT data FROM requests WHERE team = ? AND kid = ? AND stored_at > ?",
            (team, kid, _NEVER if live_after_ms is None else live_after_ms),
        )
        return bytes(rows[0][0]) if rows else None

    def requests(self, team: str, live_after_ms: int | None = None) -> list[PendingRequest]:
        rows = self._sql.read(
            "SELECT kid, data, stored_at FROM requests WHERE team = ? AND stored_at > ? "
            "ORDER BY kid",
            (team, _NEVER if live_after_ms is None else live_after_ms),
        )
        return [PendingRequest(str(k), bytes(d), int(t)) for k, d, t in rows]

    def remove_request(self, team: str, kid: str) -> bool:
        with self._sql.tx(solo=True) as conn:
            old = conn.execute(
                "SELECT LENGTH(data) FROM requests WHERE team = ? AND kid = ?", (team, kid)
            ).fetchone()
            if old is None:
                return False
            conn.execute("DELETE FROM requests WHERE team = ? AND kid = ?", (team, kid))
            charge(conn, None, team, TEAM_OWNER, -int(old[0]))
        return True

    # -- change feed -----------------------------------------------------------------

    def changes(self, team: str, since: int, limit: int = 1000) -> list[Change]:
        rows = self._sql.read(
            "SELECT cursor, kind, project, writer, seq FROM changes WHERE team = ? AND cursor > ? "
            "ORDER BY cursor LIMIT ?",
            (team, since, limit),
        )
        return [Change(int(c), str(k), p, w, s) for c, k, p, w, s in rows]

    def cursor(self, team: str) -> int:
        rows = self._sql.read("SELECT cursor FROM teams WHERE team = ?", (team,))
        return int(rows[0][0]) if rows else 0

    # -- shared state ----------------------------------------------------------------

    def remember_nonce(self, kid: str, nonce: str, expires_ms: int, now_ms: int) -> bool:
        return self._nonces.remember(kid, nonce, expires_ms, now_ms)

    def take_token(self, key: str, rate_per_s: float, burst: int, now_ms: int) -> float:
        return self._buckets.take(key, rate_per_s, burst, now_ms)

    # -- chunk rows ------------------------------------------------------------------

    def missing_chunks(self, team: str, project: str, writer: str, ids: Iterable[str]) -> list[str]:
        wanted = sorted(set(ids))
        have: set[str] = set()
        for i in range(0, len(wanted), 500):
            part = wanted[i : i + 500]
            marks = ",".join("?" * len(part))
            rows = self._sql.read(
                f"SELECT id FROM chunks WHERE team = ? AND project = ? AND writer = ? "
                f"AND id IN ({marks})",
                (team, project, writer, *part),
            )
            have.update(str(r[0]) for r in rows)
        return [i for i in wanted if i not in have]

    def chunk_row_add(self, key: BlobKey, size: int, now_ms: int) -> bool:
        with self._sql.tx() as conn:  # group commit
            cur = conn.execute(
                "UPDATE chunks SET stored_at = MAX(stored_at, ?) "
                "WHERE team = ? AND project = ? AND writer = ? AND id = ?",
                (now_ms, *key.parts()),
            )
            if cur.rowcount:
                return False
            charge(conn, self.quota, key.team, key.writer, size)
            conn.execute(
                "INSERT INTO chunks (team, project, writer, id, size, stored_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (*key.parts(), size, now_ms),
            )
            return True

    def chunk_rows(self, after: BlobKey | None, limit: int) -> list[tuple[BlobKey, int]]:
        start = after.parts() if after is not None else ("", "", "", "")
        rows = self._sql.read(
            "SELECT team, project, writer, id, size FROM chunks "
            "WHERE (team, project, writer, id) > (?, ?, ?, ?) "
            "ORDER BY team, project, writer, id LIMIT ?",
            (*start, limit),
        )
        return [(BlobKey(str(t), str(p), str(w), str(i)), int(n)) for t, p, w, i, n in rows]

    def chunk_rows_named(self, keys: Sequence[BlobKey]) -> set[BlobKey]:
        conn = self._sql.conn()
        found: set[BlobKey] = set()
        try:
            for key in keys:
                row = conn.execute(
                    "SELECT 1 FROM chunks WHERE team = ? AND project = ? AND writer = ? AND id = ?",
                    key.parts(),
                ).fetchone()
                if row is not None:
                    found.add(key)
        except sqlite3.Error as exc:
            raise StorageError(f"hub database read failed: {exc}") from exc
        return found

    def chunk_rows_of_writer(
        self, team: str, project: str, writer: str, stored_before_ms: int
    ) -> list[str]:
        rows = self._sql.read(
            "SELECT id FROM chunks WHERE team = ? AND project = ? AND writer = ? AND stored_at < ?",
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
        rows = self._sql.read(
            "SELECT c.team, c.project, c.writer, c.id FROM chunks c "
            "WHERE c.stored_at < ? AND (? IS NULL OR c.team = ?) AND (? IS NULL OR c.writer = ?) "
            "AND NOT EXISTS (SELECT 1 FROM manifest_chunks r WHERE r.team = c.team AND "
            "r.project = c.project AND r.writer = c.writer AND r.id = c.id) LIMIT ?",
            (stored_before_ms, team, team, writer, writer, limit),
        )
        return [BlobKey(str(t), str(p), str(w), str(i)) for t, p, w, i in rows]

    def chunk_rows_remove(
        self, keys: Sequence[BlobKey], *, stored_before_ms: int, unreferenced: bool
    ) -> list[BlobKey]:
        gone: list[BlobKey] = []
        with self._sql.tx(solo=True) as conn:
            for key in keys:
                row = conn.execute(
                    "SELECT size, stored_at FROM chunks "
                    "WHERE team = ? AND project = ? AND writer = ? AND id = ?",
                    key.parts(),
                ).fetchone()
                if row is None or int(row[1]) >= stored_before_ms:
                    continue
                if (
                    unreferenced
                    and conn.execute(
                        "SELECT 1 FROM manifest_chunks WHERE team = ? AND project = ? "
                        "AND writer = ? AND id = ? LIMIT 1",
                        key.parts(),
                    ).fetchone()
                ):
                    continue
                conn.execute(
                    "DELETE FROM chunks WHERE team = ? AND project = ? AND writer = ? AND id = ?",
                    key.parts(),
                )
                charge(conn, None, key.team, key.writer, -int(row[0]))
                gone.append(key)
        return gone
