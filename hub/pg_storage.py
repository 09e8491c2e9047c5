"""Hub metadata in PostgreSQL, chunk blobs in an S3-compatible bucket: for several
stateless hub replicas.

Nothing that matters lives in one process: every replica reads and writes the
same rows, so compare-and-swap, quotas, nonces, rate limits and the per-team
change cursor hold across replicas.

- A writer's slot is compare-and-swapped in **one statement** (``INSERT ... ON
  CONFLICT ... DO UPDATE ... WHERE excluded.seq > slots.seq``): of two replicas
  storing the same seq, exactly one row count is 1.
- A keyring is replaced only by one citing a newer roster version; a roster
  version is inserted once.  Losing either race raises :class:`StaleSeq`.
- A team's change cursor is allocated by ``UPDATE teams SET cursor = cursor + 1
  ... RETURNING cursor`` in the writing transaction, which holds the team row's
  lock until commit: within a team, cursor order is commit order.
- Every change sends ``NOTIFY sealmem_changes, team`` (delivered on commit);
  :meth:`PgStorage.listen` runs one listener thread per process that hands the
  team to a callback, which wakes that replica's long-polling readers.
- :meth:`PgStorage.team_lock` is a per-team lock across processes (a
  session-level advisory lock on a pooled connection, released when the
  block ends or, if the process dies, when its connection closes).

Blobs follow the embedded backend's order: the blob is written (and durable)
before the row naming it commits; a row is deleted before its blob.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..protocol.envelope import unpack
from ..protocol.errors import Rejected
from ..protocol.keyring import Keyring
from ..protocol.verify import MAX_KEYRING_BYTES
from .pg_schema import NOTIFY_CHANNEL, upgrade
from .s3_blobs import S3Blobs
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

__all__ = ["PgStorage"]

log = logging.getLogger("sealmem.hub")

_NEVER = -(2**63)


def _keyring_roster_version(blob: KeyringBlob) -> int:
    """The roster version a (verified) keyring cites: its compare-and-swap key."""
    try:
        body = unpack(blob.data, what="keyring", max_bytes=MAX_KEYRING_BYTES).body
        return Keyring.from_body(body).roster_version
    except Rejected as exc:  # the caller verified it: this would be a bug upstream
        raise StorageError(f"keyring {blob.project}/{blob.epoch} does not parse: {exc}") from exc


def _lock_key(team: str) -> int:
    """A signed 64-bit advisory lock key for ``team``."""
    digest = hashlib.blake2b(f"sealmem/team-lock\x00{team}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PgStorage(Storage):
    """See the module docstring.  Any number of instances (replicas) per database."""

    def __init__(self, dsn: str, blobs: S3Blobs, *, pool_size: int = 16) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError:  # pragma: no cover - the hub-scale extra is not installed
            raise StorageError(
                "the PostgreSQL backend needs psycopg: pip install 'sealmem[hub-scale]'"
            ) from None
        self._psycopg = psycopg
        self._dsn = dsn
        self._blobs = blobs
        self._where = _redact(dsn)
        try:  # one direct connection first: a wrong DSN fails now, with a clear message
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                upgrade(conn)
        except psycopg.Error as exc:
            raise StorageError(
                f"cannot use the hub database {self._where}: {_brief(exc)}"
            ) from None
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            open=False,
            name="sealmem-hub",
        )
        try:
            self._pool.open(wait=True, timeout=30)
        except Exception as exc:
            self._pool.close()
            raise StorageError(f"cannot open connections to {self._where}: {exc}") from None
        self._listener: threading.Thread | None = None
        self._stopping = threading.Event()
        self._next_prune = 0

    # -- plumbing --------------------------------------------------------------------

    @contextlib.contextmanager
    def _tx(self) -> Iterator[Any]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                yield conn
        except self._psycopg.Error as exc:
            raise StorageError(f"hub database write failed: {_brief(exc)}") from exc

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        try:
            with self._pool.connection() as conn:
                return list(conn.execute(sql, args).fetchall())
        except self._psycopg.Error as exc:
            raise StorageError(f"hub database read failed: {_brief(exc)}") from exc

    def close(self) -> None:
        self._stopping.set()
        self._pool.close()
        if self._listener is not None:
            self._listener.join(timeout=5)

    @staticmethod
    def _add_usage(conn: Any, team: str, delta: int) -> None:
        if delta:
            conn.execute("UPDATE teams SET bytes = bytes + %s WHERE team = %s", (delta, team))

    @staticmethod
    def _change(
        conn: Any, team: str, kind: str, now_ms: int,
        project: str | None = None, writer: str | None = None, seq: int | None = None,
    ) -> int:  # fmt: skip
        row = conn.execute(
            "UPDATE teams SET cursor = cursor + 1 WHERE team = %s RETURNING cursor", (team,)
        ).fetchone()
        if row is None:
            raise StorageError(f"team {team} has no row: a change cannot be recorded")
        cursor = int(row[0])
        conn.execute(
            "INSERT INTO changes (team, cursor, kind, project, writer, seq, at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (team, cursor, kind, project, writer, seq, now_ms),
        )
        conn.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, team))
        return cursor

    # -- teams, rosters, keyrings ----------------------------------------------------

    def team_exists(self, team: str) -> bool:
        return bool(self._read("SELECT 1 FROM teams WHERE team = %s", (team,)))

    def team_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM teams")[0][0])

    def rosters(self, team: str, after_version: int) -> list[bytes]:
        rows = self._read(
            "SELECT data FROM rosters WHERE team = %s AND version > %s ORDER BY version",
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
                fresh = conn.execute(
                    "INSERT INTO teams (team, registered_at) VALUES (%s, %s) "
                    "ON CONFLICT (team) DO NOTHING",
                    (team, now_ms),
                )
                if fresh.rowcount != 1:
                    raise StaleSeq(1)
            cur = conn.execute(
                "INSERT INTO rosters (team, version, data, stored_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (team, version) DO NOTHING",
                (team, version, data, now_ms),
            )
            if cur.rowcount != 1:
                raise StaleSeq(version)
            with conn.cursor() as c:
                c.executemany(
                    "INSERT INTO members (team, kid, sign_public) VALUES (%s, %s, %s) "
                    "ON CONFLICT (team, kid) DO UPDATE SET sign_public = excluded.sign_public",
                    [(team, kid, pub) for kid, pub in members],
                )
            size = len(data)
            for k in keyrings:
                size += self._store_keyring(conn, team, k, now_ms)
            self._add_usage(conn, team, size)
            self._change(conn, team, "roster", now_ms, None, None, version)

    def _store_keyring(self, conn: Any, team: str, k: KeyringBlob, now_ms: int) -> int:
        """Insert a keyring or replace one citing an older roster (compare-and-swap on
        the roster version); the usage delta, or :class:`StaleSeq` if it lost."""
        cited = _keyring_roster_version(k)
        old = conn.execute(
            "SELECT octet_length(data) FROM keyrings WHERE team = %s AND project = %s "
            "AND epoch = %s",
            (team, k.project, k.epoch),
        ).fetchone()
        cur = conn.execute(
            "INSERT INTO keyrings (team, project, epoch, roster_version, data, stored_at) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (team, project, epoch) DO UPDATE "
            "SET roster_version = excluded.roster_version, data = excluded.data, "
            "stored_at = excluded.stored_at "
            "WHERE excluded.roster_version > keyrings.roster_version",
            (team, k.project, k.epoch, cited, k.data, now_ms),
        )
        if cur.rowcount != 1:
            raise StaleSeq(cited)
        self._change(conn, team, "keyring", now_ms, k.project, None, k.epoch)
        return len(k.data) - (int(old[0]) if old else 0)

    def keyrings(self, team: str, project: str | None = None) -> list[KeyringBlob]:
        if project is None:
            rows = self._read(
                "SELECT project, epoch, data FROM keyrings WHERE team = %s ORDER BY project, epoch",
                (team,),
            )
        else:
            rows = self._read(
                "SELECT project, epoch, data FROM keyrings WHERE team = %s AND project = %s "
                "ORDER BY epoch",
                (team, project),
            )
        return [KeyringBlob(str(p), int(e), bytes(d)) for p, e, d in rows]

    def put_keyring(self, team: str, keyring: KeyringBlob, now_ms: int) -> None:
        with self._tx() as conn:
            self._add_usage(conn, team, self._store_keyring(conn, team, keyring, now_ms))

    def keys_of(self, kid: str) -> list[tuple[str, bytes]]:
        rows = self._read("SELECT team, sign_public FROM members WHERE kid = %s", (kid,))
        return [(str(t), bytes(p)) for t, p in rows]

    # -- manifests and chunks --------------------------------------------------------

    def heads(self, team: str) -> list[StoredHead]:
        rows = self._read(
            "SELECT m.project, m.writer, m.seq, m.hash, m.reset_at FROM slots s "
            "JOIN manifests m ON (m.team, m.project, m.writer, m.seq) = "
            "(s.team, s.project, s.writer, s.seq) WHERE s.team = %s",
            (team,),
        )
        return [StoredHead(str(p), str(w), int(s), str(h), int(r)) for p, w, s, h, r in rows]

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
            "SELECT writer, seq FROM slots WHERE team = %s AND project = %s", (team, project)
        )
        return {str(w): int(s) for w, s in rows}

    def put_manifest(
        self, team: str, head: StoredHead, data: bytes, keep: int, now_ms: int
    ) -> None:
        slot = (team, head.project, head.writer)
        with self._tx() as conn:
            swapped = conn.execute(
                "INSERT INTO slots (team, project, writer, seq) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (team, project, writer) DO UPDATE SET seq = excluded.seq "
                "WHERE excluded.seq > slots.seq",
                (*slot, head.seq),
            )
            if swapped.rowcount != 1:
                row = conn.execute(
                    "SELECT seq FROM slots WHERE team = %s AND project = %s AND writer = %s",
                    slot,
                ).fetchone()
                raise StaleSeq(int(row[0]) if row else head.seq)
            conn.execute(
                "INSERT INTO manifests (team, project, writer, seq, hash, reset_at, data, "
                "stored_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (*slot, head.seq, head.hash, head.reset_at, data, now_ms),
            )
            old = conn.execute(
                "DELETE FROM manifests WHERE (team, project, writer, seq) IN ("
                "SELECT team, project, writer, seq FROM manifests WHERE team = %s AND "
                "project = %s AND writer = %s ORDER BY seq DESC OFFSET %s) "
                "RETURNING octet_length(data)",
                (*slot, keep),
            ).fetchall()
            self._add_usage(conn, team, len(data) - sum(int(n) for (n,) in old))
            self._change(conn, team, "manifest", now_ms, head.project, head.writer, head.seq)

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

    def put_chunk(
        self, team: str, project: str, writer: str, chunk_id: str, data: bytes, now_ms: int
    ) -> bool:
        key = (team, project, writer, chunk_id)
        with self._tx() as conn:  # already there: refresh its age, keep the blob
            again = conn.execute(
                "UPDATE chunks SET stored_at = GREATEST(stored_at, %s) WHERE team = %s "
                "AND project = %s AND writer = %s AND id = %s",
                (now_ms, *key),
            )
        if again.rowcount:
            return False
        self._blobs.put(*key, data)  # durable before the row that names it
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO chunks (team, project, writer, id, size, stored_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (*key, len(data), now_ms),
            )
            if cur.rowcount:
                self._add_usage(conn, team, len(data))
        return bool(cur.rowcount)

    def chunk(self, team: str, project: str, writer: str, chunk_id: str) -> bytes | None:
        if self.missing_chunks(team, project, writer, [chunk_id]):
            return None
        return self._blobs.get(team, project, writer, chunk_id)

    def collect(
        self, team: str, project: str, writer: str, keep: set[str], older_than_ms: int
    ) -> int:
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT id, size FROM chunks WHERE team = %s AND project = %s AND writer = %s "
                "AND stored_at < %s FOR UPDATE",
                (team, project, writer, older_than_ms),
            ).fetchall()
            gone = [(str(i), int(n)) for i, n in rows if i not in keep]
            if gone:
                conn.execute(
                    "DELETE FROM chunks WHERE team = %s AND project = %s AND writer = %s "
                    "AND id = ANY(%s)",
                    (team, project, writer, [i for i, _ in gone]),
                )
                self._add_usage(conn, team, -sum(n for _, n in gone))
        for chunk_id, _ in gone:  # rows first, then blobs: a crash leaves only orphans
            self._blobs.delete(team, project, writer, chunk_id)
        return len(gone)

    def collect_orphans(self, min_age_s: float) -> int:
        removed = 0
        batch: list[tuple[str, str, str, str]] = []

        def sweep() -> int:
            named: set[tuple[str, str, str, str]] = set()
            for team, project, writer in {b[:3] for b in batch}:
                ids = [b[3] for b in batch if b[:3] == (team, project, writer)]
                missing = set(self.missing_chunks(team, project, writer, ids))
                named.update((team, project, writer, i) for i in ids if i not in missing)
            count = 0
            for item in batch:
                if item not in named:
                    self._blobs.delete(*item)
                    count += 1
            batch.clear()
            return count

        for blob in self._blobs.listing(min_age_s):
            batch.append((blob.team, blob.project, blob.writer, blob.chunk_id))
            if len(batch) >= 500:
                removed += sweep()
        return removed + sweep()

    def usage(self, team: str) -> int:
        rows = self._read("SELECT bytes FROM teams WHERE team = %s", (team,))
        return int(rows[0][0]) if rows else 0

    def total_usage(self) -> int:
        return int(self._read("SELECT COALESCE(SUM(bytes), 0) FROM teams")[0][0])

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
            # the team row serializes offers to one team across replicas
            conn.execute("SELECT 1 FROM teams WHERE team = %s FOR UPDATE", (team,))
            expired = conn.execute(
                "DELETE FROM requests WHERE team = %s AND stored_at <= %s "
                "RETURNING octet_length(data)",
                (team, live_after_ms),
            ).fetchall()
            self._add_usage(conn, team, -sum(int(n) for (n,) in expired))
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
            self._add_usage(conn, team, len(data) - (int(old[0]) if old else 0))
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
        with self._tx() as conn:
            gone = conn.execute(
                "DELETE FROM requests WHERE team = %s AND kid = %s RETURNING octet_length(data)",
                (team, kid),
            ).fetchone()
            if gone is None:
                return False
            self._add_usage(conn, team, -int(gone[0]))
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

    def remember_nonce(self, kid: str, nonce: str, now_ms: int, expires_at_ms: int) -> bool:
        """Record a request nonce; False when a live one was already recorded (a replay,
        whichever replica received the first)."""
        with self._tx() as conn:
            if now_ms >= self._next_prune:
                conn.execute("DELETE FROM nonces WHERE expires_at <= %s", (now_ms,))
                self._next_prune = now_ms + 60_000
            cur = conn.execute(
                "INSERT INTO nonces (kid, nonce, expires_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (kid, nonce) DO UPDATE SET expires_at = excluded.expires_at "
                "WHERE nonces.expires_at <= %s",
                (kid, nonce, expires_at_ms, now_ms),
            )
        return bool(cur.rowcount)

    def take_token(self, key: str, rate: float, burst: int, now_s: float) -> float:
        """Spend one token of the shared bucket ``key``; 0 when spent, else the seconds
        until one is available (nothing spent)."""
        with self._tx() as conn:
            row = conn.execute(
                "INSERT INTO rate_buckets AS b (key, tokens, at) VALUES (%(k)s, %(burst)s - 1, "
                "%(now)s) ON CONFLICT (key) DO UPDATE SET tokens = LEAST(%(burst)s, b.tokens + "
                "GREATEST(0, %(now)s - b.at) * %(rate)s) - 1, at = GREATEST(b.at, %(now)s) "
                "WHERE LEAST(%(burst)s, b.tokens + GREATEST(0, %(now)s - b.at) * %(rate)s) >= 1 "
                "RETURNING tokens",
                {"k": key, "burst": float(burst), "now": now_s, "rate": rate},
            ).fetchone()
            if row is not None:
                return 0.0
            left = conn.execute("SELECT tokens, at FROM rate_buckets WHERE key = %s", (key,))
            tokens, at = left.fetchone()
        have = min(float(burst), float(tokens) + max(0.0, now_s - float(at)) * rate)
        return max((1.0 - have) / rate, 0.001)

    @contextlib.contextmanager
    def team_lock(self, team: str) -> Iterator[None]:
        """Hold ``team``'s lock, shared by every process on this database."""
        key = _lock_key(team)
        try:
            with self._pool.connection() as conn:
                conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                try:
                    yield
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except self._psycopg.Error as exc:
            raise StorageError(f"hub database lock failed: {_brief(exc)}") from exc

    def listen(self, callback: Callable[[str | None], None]) -> None:
        """Call ``callback(team)`` from a background thread whenever any replica records a
        change for ``team``; ``callback(None)`` after a reconnect (changes may have been
        missed: wake everyone)."""
        if self._listener is not None:
            raise StorageError("this storage already has a change listener")
        self._listener = threading.Thread(
            target=self._listen, args=(callback,), name="sealmem-hub-listen", daemon=True
        )
        self._listener.start()

    def _listen(self, callback: Callable[[str | None], None]) -> None:
        psycopg = self._psycopg
        delay = 0.1
        first = True
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self._dsn, autocommit=True) as conn:
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    if not first:
                        callback(None)
                    first, delay = False, 0.1
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=0.5):
                            callback(note.payload)
            except psycopg.Error as exc:
                if self._stopping.is_set():
                    return
                log.warning("change listener lost the database (%s); reconnecting", _brief(exc))
                time.sleep(delay)
                delay = min(delay * 2, 5.0)


def _brief(exc: BaseException) -> str:
    """A database error in one line, without connection parameters."""
    sqlstate = getattr(exc, "sqlstate", None)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"{text} (SQLSTATE {sqlstate})" if sqlstate else text


def _redact(dsn: str) -> str:
    """The DSN with any password removed, for messages."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn if "password" not in dsn else "(the configured database)"
    host = parts.hostname or ""
    netloc = f"{parts.username}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
