"""The hub's metadata in SQL, written once for SQLite and PostgreSQL.

:class:`SqlStorage` holds every statement and rule of a metadata backend outside a
team's write transaction (that is :mod:`.writes`); what the engines spell
differently is their :class:`~sealmem.hub.storage.dialect.Dialect`.  A backend
adds how it connects, locks and commits (:meth:`SqlStorage._read`,
:meth:`SqlStorage._tx`) and what it keeps its own way (nonces, rate-limit buckets,
wake-ups): :mod:`.sqlite` and :mod:`.postgres`.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from . import (
    TEAM_OWNER,
    Admission,
    Change,
    KeyringBlob,
    PendingRequest,
    Storage,
    StoredHead,
    TeamWrite,
)
from .blobs import BlobKey
from .chunks import Check
from .dialect import Conn, Dialect
from .writes import HEADS, PART, SqlTeamWrite, charge, missing_ids, stored_heads

__all__ = ["SqlStorage"]

_NEVER = -(2**63)  # an expiry bound no request is posted at or before
_KEY = "team = ? AND project = ? AND writer = ? AND id = ?"
_UNREFERENCED = (
    "NOT EXISTS (SELECT 1 FROM manifest_chunks r WHERE r.team = chunks.team AND "
    "r.project = chunks.project AND r.writer = chunks.writer AND r.id = chunks.id)"
)


class SqlStorage(Storage):
    """Metadata in an SQL engine; see the module docstring."""

    dialect: Dialect

    @abc.abstractmethod
    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """The rows of one statement, outside any write (each read its own snapshot)."""

    @abc.abstractmethod
    def _tx(self, *teams: str, grouped: bool = False) -> contextlib.AbstractContextManager[Conn]:
        """A write transaction holding the write locks of ``teams``, committed (durably)
        on a normal exit.  ``grouped``: a write that changes nothing other writes verify
        against (a manifest, a chunk row), which the backend may commit together with
        others (SQLite's group commit)."""

    @contextlib.contextmanager
    def write(self, team: str) -> Iterator[TeamWrite]:
        with self._tx(team) as conn:
            yield SqlTeamWrite(conn, team, self.quota, self.dialect)

    @contextlib.contextmanager
    def push(self, team: str) -> Iterator[TeamWrite]:
        with self._tx(team, grouped=True) as conn:
            yield SqlTeamWrite(conn, team, self.quota, self.dialect)

    # -- teams, rosters, keyrings ----------------------------------------------------

    def team_exists(self, team: str) -> bool:
        return bool(self._read("SELECT 1 FROM teams WHERE team = ?", (team,)))

    def team_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM teams")[0][0])

    def generation(self, team: str) -> int | None:
        rows = self._read("SELECT generation FROM teams WHERE team = ?", (team,))
        return int(rows[0][0]) if rows else None

    def rosters(self, team: str, after_version: int) -> list[bytes]:
        rows = self._read(
            "SELECT data FROM rosters WHERE team = ? AND version > ? ORDER BY version",
            (team, after_version),
        )
        return [bytes(r[0]) for r in rows]

    def keyrings(self, team: str, project: str | None = None) -> list[KeyringBlob]:
        sql = "SELECT project, epoch, data, roster_version FROM keyrings WHERE team = ?"
        if project is None:
            rows = self._read(sql + " ORDER BY project, epoch", (team,))
        else:
            rows = self._read(sql + " AND project = ? ORDER BY epoch", (team, project))
        return [KeyringBlob(str(p), int(e), bytes(d), int(v)) for p, e, d, v in rows]

    def keys_of(self, kid: str) -> list[tuple[str, bytes]]:
        rows = self._read("SELECT team, sign_public FROM members WHERE kid = ?", (kid,))
        return [(str(t), bytes(p)) for t, p in rows]

    # -- manifests -------------------------------------------------------------------

    def heads(self, team: str) -> list[StoredHead]:
        return stored_heads(self._read(HEADS, (team,)))

    def manifests(
        self, team: str, project: str, writer: str | None = None
    ) -> dict[str, list[bytes]]:
        sql = "SELECT writer, data FROM manifests WHERE team = ? AND project = ?"
        if writer is None:
            rows = self._read(sql + " ORDER BY writer, seq DESC", (team, project))
        else:
            rows = self._read(sql + " AND writer = ? ORDER BY seq DESC", (team, project, writer))
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

    # -- usage -----------------------------------------------------------------------

    def usage(self, team: str) -> int:
        rows = self._read("SELECT COALESCE(SUM(bytes), 0) FROM usage WHERE team = ?", (team,))
        return int(rows[0][0])

    def member_usage(self, team: str, member: str) -> int:
        rows = self._read("SELECT bytes FROM usage WHERE team = ? AND member = ?", (team, member))
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
        with self._tx(team) as conn:  # the team's lock: the inbox limits hold across replicas
            expired = conn.execute(
                "DELETE FROM requests WHERE team = ? AND stored_at <= ? RETURNING LENGTH(data)",
                (team, live_after_ms),
            ).fetchall()
            charge(conn, None, team, TEAM_OWNER, -sum(int(n) for (n,) in expired))
            pending, from_address, oldest = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(CASE WHEN address = ? THEN 1 ELSE 0 END), 0), "
                "MIN(stored_at) FROM requests WHERE team = ? AND kid <> ?",
                (address, team, kid),
            ).fetchone()
            old = conn.execute(
                "SELECT LENGTH(data) FROM requests WHERE team = ? AND kid = ?", (team, kid)
            ).fetchone()
            oldest_at = None if oldest is None else int(oldest)
            if old is None and (pending >= max_pending or from_address >= max_per_address):
                return Admission(False, int(pending), int(from_address), oldest_at)
            conn.execute(
                "INSERT INTO requests (team, kid, data, stored_at, address) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (team, kid) DO UPDATE SET "
                "data = excluded.data, stored_at = excluded.stored_at, address = excluded.address",
                (team, kid, data, now_ms, address),
            )
            # anyone may post: like data, a request stops short of the reserve
            charge(conn, self.quota, team, TEAM_OWNER, len(data) - (int(old[0]) if old else 0))
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
        with self._tx(team) as conn:
            gone = conn.execute(
                "DELETE FROM requests WHERE team = ? AND kid = ? RETURNING LENGTH(data)",
                (team, kid),
            ).fetchone()
            if gone is None:
                return False
            charge(conn, None, team, TEAM_OWNER, -int(gone[0]))
        return True

    # -- change feed -----------------------------------------------------------------

    def changes(self, team: str, since: int, limit: int = 1000) -> list[Change]:
        rows = self._read(
            "SELECT cursor, kind, project, writer, seq FROM changes WHERE team = ? "
            "AND cursor > ? ORDER BY cursor LIMIT ?",
            (team, since, limit),
        )
        return [
            Change(int(c), str(k), p, w, None if s is None else int(s)) for c, k, p, w, s in rows
        ]

    def cursor(self, team: str) -> int:
        rows = self._read("SELECT cursor FROM teams WHERE team = ?", (team,))
        return int(rows[0][0]) if rows else 0

    # -- chunk rows ------------------------------------------------------------------

    def missing_chunks(self, team: str, project: str, writer: str, ids: Iterable[str]) -> list[str]:
        return missing_ids(self._read, (team, project, writer), ids)

    def chunk_row_add(
        self, key: BlobKey, size: int, now_ms: int, check: Check | None = None
    ) -> bool:
        with self._tx(key.team, grouped=True) as conn:
            if check is not None:
                check(SqlTeamWrite(conn, key.team, self.quota, self.dialect).generation)
            again = conn.execute(
                "UPDATE chunks SET stored_at = CASE WHEN stored_at < ? THEN ? ELSE stored_at "
                f"END WHERE {_KEY}",
                (now_ms, now_ms, *key.parts()),
            )
            if again.rowcount:
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
        rows = self._read(
            "SELECT team, project, writer, id, size FROM chunks "
            "WHERE (team, project, writer, id) > (?, ?, ?, ?) "
            "ORDER BY team, project, writer, id LIMIT ?",
            (*start, limit),
        )
        return [(BlobKey(str(t), str(p), str(w), str(i)), int(n)) for t, p, w, i, n in rows]

    def chunk_rows_named(self, keys: Sequence[BlobKey]) -> set[BlobKey]:
        found: set[BlobKey] = set()
        for i in range(0, len(keys), PART // 4):
            part = keys[i : i + PART // 4]
            marks = ", ".join(["(?, ?, ?, ?)"] * len(part))
            rows = self._read(
                "SELECT team, project, writer, id FROM chunks "
                f"WHERE (team, project, writer, id) IN (VALUES {marks})",
                [name for key in part for name in key.parts()],
            )
            found.update(BlobKey(str(t), str(p), str(w), str(c)) for t, p, w, c in rows)
        return found

    def chunk_rows_of_writer(
        self, team: str, project: str, writer: str, stored_before_ms: int
    ) -> list[str]:
        rows = self._read(
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
        where: list[str] = ["stored_at < ?"]
        args: list[object] = [stored_before_ms]
        for column, value in (("team", team), ("writer", writer)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        rows = self._read(
            f"SELECT team, project, writer, id FROM chunks WHERE {' AND '.join(where)} "
            f"AND {_UNREFERENCED} LIMIT ?",
            (*args, limit),
        )
        return [BlobKey(str(t), str(p), str(w), str(i)) for t, p, w, i in rows]

    def chunk_rows_remove(
        self, keys: Sequence[BlobKey], *, stored_before_ms: int, unreferenced: bool
    ) -> list[BlobKey]:
        gone: list[BlobKey] = []
        if not keys:
            return gone
        sql = f"DELETE FROM chunks WHERE {_KEY} AND stored_at < ?"
        sql += f" AND {_UNREFERENCED} RETURNING size" if unreferenced else " RETURNING size"
        with self._tx(*(k.team for k in keys)) as conn:
            for key in keys:
                row = conn.execute(sql, (*key.parts(), stored_before_ms)).fetchone()
                if row is not None:
                    charge(conn, None, key.team, key.writer, -int(row[0]))
                    gone.append(key)
        return gone
