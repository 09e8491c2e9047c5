"""The hub's metadata in SQL, written once for SQLite and PostgreSQL.

:class:`Storage` holds every statement and rule of a metadata backend outside a
team's write transaction (that is :mod:`.writes`) and its chunks
(:mod:`.chunks`); what the engines spell differently is their
:class:`~sealmem.hub.storage.dialect.Dialect`.  A backend adds how it connects,
locks and commits (``_read``, ``_tx``) and what it keeps its own way (nonces,
rate-limit buckets, wake-ups): :mod:`.sqlite` and :mod:`.postgres`.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator

from .chunks import ChunkRules
from .values import TEAM_OWNER, Admission, Change, KeyringBlob, PendingRequest
from .writes import TeamWrite, charge

__all__ = ["Storage"]

_NEVER = -(2**63)  # an expiry bound no request is posted at or before


class Storage(ChunkRules):
    """The hub's persistence; see :mod:`sealmem.hub.storage` for what it guarantees.
    The chunk methods (blob and row in order) come from
    :class:`~sealmem.hub.storage.chunks.ChunkRules`."""

    @contextlib.contextmanager
    def write(self, team: str) -> Iterator[TeamWrite]:
        """A transaction holding ``team``'s write lock; commits on a normal exit."""
        with self._tx(team) as conn:
            yield TeamWrite(conn, team, self.quota, self.dialect)

    @contextlib.contextmanager
    def push(self, team: str) -> Iterator[TeamWrite]:
        """:meth:`write` for a manifest: a write that only adds to one writer's slot and
        changes nothing other writes verify against (not the team's generation).  A
        backend may commit several of these together (SQLite: group commit); each
        still returns only once its own work is durable, and fails alone."""
        with self._tx(team, grouped=True) as conn:
            yield TeamWrite(conn, team, self.quota, self.dialect)

    @abc.abstractmethod
    def remember_nonce(self, kid: str, nonce: str, expires_ms: int, now_ms: int) -> bool:
        """Record (kid, nonce) until ``expires_ms``; False if it is already recorded and
        not expired (a replay).  Expired nonces are purged along the way."""

    @abc.abstractmethod
    def nonce_seen(self, kid: str, nonce: str, now_ms: int) -> bool:
        """Whether (kid, nonce) is recorded and not expired at ``now_ms``: a read only, for
        when :meth:`remember_nonce` finds no space to record it."""

    @abc.abstractmethod
    def take_token(self, key: str, rate_per_s: float, burst: int, now_ms: int) -> float:
        """Spend one token of bucket ``key`` (refilled at ``rate_per_s``, holding at most
        ``burst``): 0.0 when spent, else the seconds until one is there (nothing spent)."""

    # -- teams, rosters, keyrings ----------------------------------------------------

    def team_exists(self, team: str) -> bool:
        return bool(self._read("SELECT 1 FROM teams WHERE team = ?", (team,)))

    def team_count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM teams")[0][0])

    def generation(self, team: str) -> int | None:
        """The team's generation (bumped by every roster or keyring write), cheaply;
        None if the team is not registered."""
        rows = self._read("SELECT generation FROM teams WHERE team = ?", (team,))
        return int(rows[0][0]) if rows else None

    def rosters(self, team: str, after_version: int) -> list[bytes]:
        """Roster envelopes above ``after_version``, in version order."""
        rows = self._read(
            "SELECT data FROM rosters WHERE team = ? AND version > ? ORDER BY version",
            (team, after_version),
        )
        return [bytes(r[0]) for r in rows]

    def checkpoint(self, team: str) -> bytes | None:
        """The team's newest checkpoint envelope, or None."""
        rows = self._read("SELECT data FROM checkpoints WHERE team = ?", (team,))
        return bytes(rows[0][0]) if rows else None

    def keyrings(self, team: str, project: str | None = None) -> list[KeyringBlob]:
        """Keyrings of one project (or all), oldest epoch first."""
        sql = "SELECT project, epoch, data, roster_version FROM keyrings WHERE team = ?"
        if project is None:
            rows = self._read(sql + " ORDER BY project, epoch", (team,))
        else:
            rows = self._read(sql + " AND project = ? ORDER BY epoch", (team, project))
        return [KeyringBlob(str(p), int(e), bytes(d), int(v)) for p, e, d, v in rows]

    def keys_of(self, kid: str) -> list[tuple[str, bytes]]:
        """(team, sign_public) for every team whose roster lists ``kid``."""
        rows = self._read("SELECT team, sign_public FROM members WHERE kid = ?", (kid,))
        return [(str(t), bytes(p)) for t, p in rows]

    # -- manifests -------------------------------------------------------------------

    def manifests(
        self, team: str, project: str, writer: str | None = None
    ) -> dict[str, list[bytes]]:
        """Per writer, its kept manifest envelopes, newest first."""
        sql = "SELECT writer, data FROM manifests WHERE team = ? AND project = ?"
        if writer is None:
            rows = self._read(sql + " ORDER BY writer, seq DESC", (team, project))
        else:
            rows = self._read(sql + " AND writer = ? ORDER BY seq DESC", (team, project, writer))
        out: dict[str, list[bytes]] = {}
        for w, data in rows:
            out.setdefault(str(w), []).append(bytes(data))
        return out

    def slot_manifests(self, team: str, prefix: str, writer: str) -> list[bytes]:
        """The newest manifest of each of ``writer``'s slots whose name starts with
        ``prefix`` (letters, digits and ``-`` only: no LIKE wildcard)."""
        rows = self._read(
            "SELECT m.data FROM manifests m WHERE m.team = ? AND m.writer = ? "
            "AND m.project LIKE ? AND m.seq = (SELECT MAX(n.seq) FROM manifests n "
            "WHERE n.team = m.team AND n.project = m.project AND n.writer = m.writer) "
            "ORDER BY m.project",
            (team, writer, prefix + "%"),
        )
        return [bytes(r[0]) for r in rows]

    def newest_seqs(self, team: str, project: str) -> dict[str, int]:
        rows = self._read(
            "SELECT writer, MAX(seq) FROM manifests WHERE team = ? AND project = ? GROUP BY writer",
            (team, project),
        )
        return {str(w): int(s) for w, s in rows}

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
        """In one transaction: delete the team's expired requests (posted at or before
        ``live_after_ms``: not returned, authenticating nobody, holding no slot); then
        store this one if ``kid`` already has a live request (replaced in its own slot)
        or the inbox holds fewer than ``max_pending`` live requests, fewer than
        ``max_per_address`` of them posted from ``address``."""
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
        """The team's live requests, by kid."""
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
        """The team's changes with a cursor above ``since``, oldest first."""
        rows = self._read(
            "SELECT cursor, kind, project, writer, seq FROM changes WHERE team = ? "
            "AND cursor > ? ORDER BY cursor LIMIT ?",
            (team, since, limit),
        )
        return [
            Change(int(c), str(k), p, w, None if s is None else int(s)) for c, k, p, w, s in rows
        ]

    def cursor(self, team: str) -> int:
        """The team's newest cursor (0 before any change)."""
        rows = self._read("SELECT cursor FROM teams WHERE team = ?", (team,))
        return int(rows[0][0]) if rows else 0
