"""The embedded storage: SQLite (WAL) for metadata, a directory of blobs for chunks.

Layout of the data directory::

    hub.db                                   metadata, objects, change feed
    blobs/{team}/{project}/{writer}/{id}     one encrypted chunk per file
    hub.lock                                 held while a hub serves this directory

Crash safety: a chunk's blob is written to a temp file, fsynced, renamed and
the directory fsynced *before* the row naming it commits; deleting goes the
other way (row first, then the blob).  A crash therefore leaves at worst a blob
no row names, which :meth:`SQLiteStorage.collect_orphans` removes.  SQLite runs
with ``synchronous=FULL`` so a committed manifest survives power loss.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import filelock

from .blobs import BlobDir
from .storage import (
    Admission,
    Change,
    KeyringBlob,
    PendingRequest,
    StaleSeq,
    Storage,
    StorageError,
    StoredHead,
)

__all__ = ["DB_FILE", "LOCK_FILE", "SQLiteStorage"]

DB_FILE = "hub.db"
LOCK_FILE = "hub.lock"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS teams (team TEXT PRIMARY KEY, registered_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS usage (team TEXT PRIMARY KEY, bytes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS rosters (
    team TEXT NOT NULL, version INTEGER NOT NULL, data BLOB NOT NULL, stored_at INTEGER NOT NULL,
    PRIMARY KEY (team, version));
CREATE TABLE IF NOT EXISTS members (
    team TEXT NOT NULL, kid TEXT NOT NULL, sign_public BLOB NOT NULL, PRIMARY KEY (team, kid));
CREATE INDEX IF NOT EXISTS members_kid ON members (kid);
CREATE TABLE IF NOT EXISTS keyrings (
    team TEXT NOT NULL, project TEXT NOT NULL, epoch INTEGER NOT NULL, data BLOB NOT NULL,
    stored_at INTEGER NOT NULL, PRIMARY KEY (team, project, epoch));
CREATE TABLE IF NOT EXISTS manifests (
    team TEXT NOT NULL, project TEXT NOT NULL, writer TEXT NOT NULL, seq INTEGER NOT NULL,
    hash TEXT NOT NULL, reset_at INTEGER NOT NULL, data BLOB NOT NULL, stored_at INTEGER NOT NULL,
    PRIMARY KEY (team, project, writer, seq));
CREATE TABLE IF NOT EXISTS chunks (
    team TEXT NOT NULL, project TEXT NOT NULL, writer TEXT NOT NULL, id TEXT NOT NULL,
    size INTEGER NOT NULL, stored_at INTEGER NOT NULL, PRIMARY KEY (team, project, writer, id));
CREATE TABLE IF NOT EXISTS requests (
    team TEXT NOT NULL, kid TEXT NOT NULL, data BLOB NOT NULL, stored_at INTEGER NOT NULL,
    address TEXT NOT NULL DEFAULT '', PRIMARY KEY (team, kid));
CREATE TABLE IF NOT EXISTS changes (
    cursor INTEGER PRIMARY KEY AUTOINCREMENT, team TEXT NOT NULL, kind TEXT NOT NULL,
    project TEXT, writer TEXT, seq INTEGER, at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS changes_team ON changes (team, cursor);
"""


_NEVER = -(2**63)  # an expiry bound no request is posted at or before

#: Columns added after a table first shipped: (table, column, definition).
_ADDED_COLUMNS = (("requests", "address", "TEXT NOT NULL DEFAULT ''"),)


def _add_missing_columns(conn: sqlite3.Connection) -> None:
    """Bring a data directory written by an older hub up to date (forward only)."""
    for table, column, definition in _ADDED_COLUMNS:
        have = {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


class SQLiteStorage(Storage):
    """See the module docstring.  One instance per data directory and process."""

    def __init__(self, data_dir: Path) -> None:
        self._dir = Path(data_dir)
        try:
            self._dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise StorageError(f"cannot use the hub data directory {self._dir}: {exc}") from exc
        # Held until close(), which may run on another thread: not thread-local.
        self._lock: filelock.FileLock | None = filelock.FileLock(
            self._dir / LOCK_FILE, mode=0o600, blocking=False, thread_local=False
        )
        try:
            self._lock.acquire()
        except filelock.Timeout:
            raise StorageError(
                f"another hub is serving {self._dir} ({LOCK_FILE} is locked); stop it first"
            ) from None
        except OSError as exc:
            raise StorageError(f"cannot lock {self._dir / LOCK_FILE}: {exc}") from exc
        self._blobs = BlobDir(self._dir / "blobs")
        self._local = threading.local()
        self._write = threading.Lock()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        try:
            with self._write:
                conn = self._conn()
                conn.executescript(_SCHEMA)
                _add_missing_columns(conn)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot set up {self._dir / DB_FILE}: {exc}") from exc

    # -- connections -----------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self._dir / DB_FILE, isolation_level=None, check_same_thread=False,
                    timeout=30.0,
                )  # fmt: skip
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
            except sqlite3.Error as exc:
                raise StorageError(f"cannot open {self._dir / DB_FILE}: {exc}") from exc
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        with self._write:
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StorageError(f"hub database write failed: {exc}") from exc

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn().execute(sql, args))
        except sqlite3.Error as exc:
            raise StorageError(f"hub database read failed: {exc}") from exc

    def close(self) -> None:
        with self._conns_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
        self._local = threading.local()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    @staticmethod
    def _add_usage(conn: sqlite3.Connection, team: str, delta: int) -> None:
        conn.execute(
            "INSERT INTO usage (team, bytes) VALUES (?, ?) "
            "ON CONFLICT (team) DO UPDATE SET bytes = bytes + excluded.bytes",
            (team, delta),
        )

    @staticmethod
    def _change(
        conn: sqlite3.Connection, team: str, kind: str, now_ms: int,
        project: str | None = None, writer: str | None = None, seq: int | None = None,
    ) -> None:  # fmt: skip
        conn.execute(
            "INSERT INTO changes (team, kind, project, writer, seq, at) VALUES (?, ?, ?, ?, ?, ?)",
            (team, kind, project, writer, seq, now_ms),
        )

    # -- teams, rosters, keyrings ----------------------------------------------------

    def team_exists(self, team: str) -> bool:
        return bool(self._read("SELECT 1 FROM teams WHERE team = ?", (team,)))

    def team_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM teams")[0][0])

    def rosters(self, team: str, after_version: int) -> list[bytes]:
        rows = self._read(
            "SELECT data FROM rosters WHERE team = ? AND version > ? ORDER BY version",
            (team, after_version),
        )
        return [bytes(r[0]) for r in rows]

    def put_roster(
        self,
        team: str,
        version: int,
        data: bytes,
        members: Sequence[tuple[str, bytes]],
        keyrings: Sequence[KeyringBlob],
        now_ms: int,
    ) -> None:
        with self._tx() as conn:
            if version == 1:
                conn.execute(
                    "INSERT INTO teams (team, registered_at) VALUES (?, ?)", (team, now_ms)
                )
            conn.execute(
                "INSERT INTO rosters (team, version, data, stored_at) VALUES (?, ?, ?, ?)",
                (team, version, data, now_ms),
            )
            conn.executemany(
                "INSERT OR REPLACE INTO members (team, kid, sign_public) VALUES (?, ?, ?)",
                [(team, kid, pub) for kid, pub in members],
            )
            size = len(data)
            for k in keyrings:
                conn.execute(
                    "INSERT OR REPLACE INTO keyrings (team, project, epoch, data, stored_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (team, k.project, k.epoch, k.data, now_ms),
                )
                size += len(k.data)
                self._change(conn, team, "keyring", now_ms, k.project, None, k.epoch)
            self._add_usage(conn, team, size)
            self._change(conn, team, "roster", now_ms, None, None, version)

    def keyrings(self, team: str, project: str | None = None) -> list[KeyringBlob]:
        if project is None:
            rows = self._read(
                "SELECT project, epoch, data FROM keyrings WHERE team = ? ORDER BY project, epoch",
                (team,),
            )
        else:
            rows = self._read(
                "SELECT project, epoch, data FROM keyrings WHERE team = ? AND project = ? "
                "ORDER BY epoch",
                (team, project),
            )
        return [KeyringBlob(str(p), int(e), bytes(d)) for p, e, d in rows]

    def put_keyring(self, team: str, keyring: KeyringBlob, now_ms: int) -> None:
        with self._tx() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO keyrings (team, project, epoch, data, stored_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (team, keyring.project, keyring.epoch, keyring.data, now_ms),
            )
            self._add_usage(conn, team, len(keyring.data))
            self._change(conn, team, "keyring", now_ms, keyring.project, None, keyring.epoch)

    def keys_of(self, kid: str) -> list[tuple[str, bytes]]:
        rows = self._read("SELECT team, sign_public FROM members WHERE kid = ?", (kid,))
        return [(str(t), bytes(p)) for t, p in rows]

    # -- manifests and chunks --------------------------------------------------------

    def heads(self, team: str) -> list[StoredHead]:
        rows = self._read(
            "SELECT project, writer, seq, hash, reset_at FROM manifests m WHERE team = ? AND "
            "seq = (SELECT MAX(seq) FROM manifests n WHERE n.team = m.team AND "
            "n.project = m.project AND n.writer = m.writer)",
            (team,),
        )
        return [StoredHead(str(p), str(w), int(s), str(h), int(r)) for p, w, s, h, r in rows]

    def manifests(
        self, team: str, project: str, writer: str | None = None
    ) -> dict[str, list[bytes]]:
        if writer is None:
            rows = self._read(
                "SELECT writer, data FROM manifests WHERE team = ? AND project = ? "
                "ORDER BY writer, seq DESC",
                (team, project),
            )
        else:
            rows = self._read(
                "SELECT writer, data FROM manifests WHERE team = ? AND project = ? AND writer = ? "
                "ORDER BY seq DESC",
                (team, project, writer),
            )
        out: dict[str, list[bytes]] = {}
        for w, data in rows:
            out.setdefault(str(w), []).append(bytes(data))
        return out

    def newest_seqs(self, team: str, project: str) -> dict[str, int]:
        rows = self._read(
            "SELECT writer, MAX(seq) FROM manifests WHERE team = ? AND project = ? GROUP BY writer",
            (team, project),
        )
        return {str(w): int(s) for w, s in rows}

    def put_manifest(
        self, team: str, head: StoredHead, data: bytes, keep: int, now_ms: int
    ) -> None:
        slot = (team, head.project, head.writer)
        with self._tx() as conn:
            row = conn.execute(
                "SELECT MAX(seq) FROM manifests WHERE team = ? AND project = ? AND writer = ?",
                slot,
            ).fetchone()
            if row[0] is not None and int(row[0]) >= head.seq:
                raise StaleSeq(int(row[0]))
            conn.execute(
                "INSERT INTO manifests (team, project, writer, seq, hash, reset_at, data, "
                "stored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (*slot, head.seq, head.hash, head.reset_at, data, now_ms),
            )
            old = conn.execute(
                "SELECT seq, LENGTH(data) FROM manifests WHERE team = ? AND project = ? AND "
                "writer = ? ORDER BY seq DESC LIMIT -1 OFFSET ?",
                (*slot, keep),
            ).fetchall()
            conn.executemany(
                "DELETE FROM manifests WHERE team = ? AND project = ? AND writer = ? AND seq = ?",
                [(*slot, seq) for seq, _ in old],
            )
            self._add_usage(conn, team, len(data) - sum(int(n) for _, n in old))
            self._change(conn, team, "manifest", now_ms, head.project, head.writer, head.seq)

    def missing_chunks(self, team: str, project: str, writer: str, ids: Iterable[str]) -> list[str]:
        wanted = sorted(set(ids))
        have: set[str] = set()
        for i in range(0, len(wanted), 500):
            part = wanted[i : i + 500]
            marks = ",".join("?" * len(part))
            rows = self._read(
                f"SELECT id FROM chunks WHERE team = ? AND project = ? AND writer = ? "
                f"AND id IN ({marks})",
                (team, project, writer, *part),
            )
            have.update(str(r[0]) for r in rows)
        return [i for i in wanted if i not in have]

    def put_chunk(
        self, team: str, project: str, writer: str, chunk_id: str, data: bytes, now_ms: int
    ) -> bool:
        if not self.missing_chunks(team, project, writer, [chunk_id]):
            return False
        self._blobs.write(self._blobs.path(team, project, writer, chunk_id), data)
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO chunks (team, project, writer, id, size, stored_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (team, project, writer, chunk_id, len(data), now_ms),
            )
            if cur.rowcount:
                self._add_usage(conn, team, len(data))
        return bool(cur.rowcount)

    def chunk(self, team: str, project: str, writer: str, chunk_id: str) -> bytes | None:
        if self.missing_chunks(team, project, writer, [chunk_id]):
            return None
        return self._blobs.read(self._blobs.path(team, project, writer, chunk_id))

    def collect(
        self, team: str, project: str, writer: str, keep: set[str], older_than_ms: int
    ) -> int:
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT id, size FROM chunks WHERE team = ? AND project = ? AND writer = ? "
                "AND stored_at < ?",
                (team, project, writer, older_than_ms),
            ).fetchall()
            gone = [(str(i), int(n)) for i, n in rows if i not in keep]
            conn.executemany(
                "DELETE FROM chunks WHERE team = ? AND project = ? AND writer = ? AND id = ?",
                [(team, project, writer, i) for i, _ in gone],
            )
            self._add_usage(conn, team, -sum(n for _, n in gone))
        for chunk_id, _ in gone:  # rows first, then blobs: a crash leaves only orphans
            self._blobs.path(team, project, writer, chunk_id).unlink(missing_ok=True)
        return len(gone)

    def collect_orphans(self, min_age_s: float) -> int:
        def named(team: str, project: str, writer: str, chunk_id: str) -> bool:
            return bool(
                self._read(
                    "SELECT 1 FROM chunks WHERE team = ? AND project = ? AND writer = ? AND id = ?",
                    (team, project, writer, chunk_id),
                )
            )

        return self._blobs.remove_unnamed(min_age_s, named)

    def usage(self, team: str) -> int:
        rows = self._read("SELECT bytes FROM usage WHERE team = ?", (team,))
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
        with self._tx() as conn:
            expired = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM requests "
                "WHERE team = ? AND stored_at <= ?",
                (team, live_after_ms),
            ).fetchone()
            if expired[0]:
                conn.execute(
                    "DELETE FROM requests WHERE team = ? AND stored_at <= ?", (team, live_after_ms)
                )
                self._add_usage(conn, team, -int(expired[1]))
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
            self._add_usage(conn, team, len(data) - (int(old[0]) if old else 0))
        oldest_at = now_ms if oldest_at is None else min(oldest_at, now_ms)
        return Admission(True, int(pending) + 1, int(from_address) + 1, oldest_at)

    def request(self, team: str, kid: str, live_after_ms: int | None = None) -> bytes | None:
        rows = self._read(
            "SELECT data FROM requests WHERE team = ? AND kid = ? AND stored_at > ?",
            (team, kid, _NEVER if live_after_ms is None else live_after_ms),
        )
        return bytes(rows[0][0]) if rows else None

    def requests(self, team: str, live_after_ms: int | None = None) -> list[PendingRequest]:
        rows = self._read(
            "SELECT kid, data, stored_at FROM requests WHERE team = ? AND stored_at > ? "
            "ORDER BY kid",
            (team, _NEVER if live_after_ms is None else live_after_ms),
        )
        return [PendingRequest(str(k), bytes(d), int(t)) for k, d, t in rows]

    def remove_request(self, team: str, kid: str) -> bool:
        with self._tx() as conn:
            old = conn.execute(
                "SELECT LENGTH(data) FROM requests WHERE team = ? AND kid = ?", (team, kid)
            ).fetchone()
            if old is None:
                return False
            conn.execute("DELETE FROM requests WHERE team = ? AND kid = ?", (team, kid))
            self._add_usage(conn, team, -int(old[0]))
        return True

    # -- change feed -----------------------------------------------------------------

    def changes(self, team: str, since: int, limit: int = 1000) -> list[Change]:
        rows = self._read(
            "SELECT cursor, kind, project, writer, seq FROM changes WHERE team = ? AND cursor > ? "
            "ORDER BY cursor LIMIT ?",
            (team, since, limit),
        )
        return [Change(int(c), str(k), p, w, s) for c, k, p, w, s in rows]

    def cursor(self, team: str) -> int:
        rows = self._read("SELECT COALESCE(MAX(cursor), 0) FROM changes WHERE team = ?", (team,))
        return int(rows[0][0])
