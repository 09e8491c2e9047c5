"""A team's write transaction on PostgreSQL (:class:`sealmem.hub.storage.TeamWrite`).

Runs in a transaction that holds the team's advisory lock
(:func:`lock_team`, taken by :meth:`PgStorage.write`): every replica that
writes this team waits for it, so what the caller verified inside is still
true when it commits.  The compare-and-swaps do not rely on the lock alone:
a writer's seq is swapped in one ``INSERT ... ON CONFLICT ... DO UPDATE ...
WHERE`` statement, a roster version inserted once, and a keyring replaced only
by one citing a newer roster, so a second writer that somehow raced would
still lose, never overwrite.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import (
    TEAM_OWNER,
    Conflict,
    KeyringBlob,
    MissingBase,
    MissingChunks,
    Quota,
    StaleSeq,
    StorageError,
    StoredHead,
    TeamWrite,
    delta_base,
    manifests_to_drop,
)
from .pg_schema import NOTIFY_CHANNEL

__all__ = ["PgTeamWrite", "charge", "lock_team", "read_heads", "record_change"]


def lock_team(conn: Any, team: str) -> None:
    """Take ``team``'s write lock until the end of the current transaction."""
    digest = hashlib.blake2b(f"sealmem/team\x00{team}".encode(), digest_size=8).digest()
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (int.from_bytes(digest, "big", signed=True),))


def _member_bytes(conn: Any, team: str, member: str) -> int:
    row = conn.execute(
        "SELECT bytes FROM usage WHERE team = %s AND member = %s", (team, member)
    ).fetchone()
    return int(row[0]) if row else 0


def charge(
    conn: Any,
    quota: Quota | None,
    team: str,
    member: str,
    delta: int,
    *,
    control: bool = False,
) -> None:
    """Add ``delta`` bytes to (team, member); a growth is checked against ``quota``
    (``control``: a roster or keyring, which may use the reserve).  The caller holds
    the team's lock, so the check and the update are one decision."""
    if quota is not None:
        quota.check(
            team,
            member,
            delta,
            lambda: int(
                conn.execute(
                    "SELECT COALESCE(SUM(bytes), 0) FROM usage WHERE team = %s", (team,)
                ).fetchone()[0]
            ),
            lambda: _member_bytes(conn, team, member),
            control=control,
        )
    if delta:
        conn.execute(
            "INSERT INTO usage (team, member, bytes) VALUES (%s, %s, %s) "
            "ON CONFLICT (team, member) DO UPDATE SET bytes = usage.bytes + excluded.bytes",
            (team, member, delta),
        )


def record_change(
    conn: Any, team: str, kind: str, now_ms: int,
    project: str | None, writer: str | None, seq: int | None, *, bump: bool,
) -> int:  # fmt: skip
    """Append to the team's feed under its row lock; notify every replica on commit."""
    row = conn.execute(
        "UPDATE teams SET cursor = cursor + 1, generation = generation + %s WHERE team = %s "
        "RETURNING cursor",
        (1 if bump else 0, team),
    ).fetchone()
    if row is None:
        raise StorageError(f"team {team} has no row: its change cannot be recorded")
    cursor = int(row[0])
    conn.execute(
        "INSERT INTO changes (team, cursor, kind, project, writer, seq, at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (team, cursor, kind, project, writer, seq, now_ms),
    )
    conn.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, team))
    return cursor


def read_heads(conn: Any, team: str) -> list[StoredHead]:
    rows = conn.execute(
        "SELECT DISTINCT ON (project, writer) project, writer, seq, hash, reset_at "
        "FROM manifests WHERE team = %s ORDER BY project, writer, seq DESC",
        (team,),
    ).fetchall()
    return [StoredHead(str(p), str(w), int(s), str(h), int(r)) for p, w, s, h, r in rows]


class PgTeamWrite(TeamWrite):
    def __init__(self, conn: Any, team: str, quota: Quota) -> None:
        self._conn = conn
        self._team = team
        self._quota = quota

    @property
    def generation(self) -> int | None:
        row = self._conn.execute(
            "SELECT generation FROM teams WHERE team = %s", (self._team,)
        ).fetchone()
        return None if row is None else int(row[0])

    def heads(self) -> list[StoredHead]:
        return read_heads(self._conn, self._team)

    def heads_of(self, slots: Iterable[tuple[str, str]]) -> list[StoredHead]:
        wanted = sorted(set(slots))
        if not wanted:
            return []
        rows = self._conn.execute(
            "SELECT DISTINCT ON (project, writer) project, writer, seq, hash, reset_at "
            "FROM manifests WHERE team = %s AND (project, writer) IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY project, writer, seq DESC",
            (self._team, [p for p, _ in wanted], [w for _, w in wanted]),
        ).fetchall()
        return [StoredHead(str(p), str(w), int(s), str(h), int(r)) for p, w, s, h, r in rows]

    def _change(
        self, kind: str, now_ms: int, project: str | None, writer: str | None, seq: int | None,
        *, bump: bool,
    ) -> None:  # fmt: skip
        record_change(self._conn, self._team, kind, now_ms, project, writer, seq, bump=bump)

    def put_roster(
        self,
        version: int,
        data: bytes,
        members: Sequence[tuple[str, bytes]],
        keyrings: Sequence[KeyringBlob],
        now_ms: int,
    ) -> None:
        conn, team = self._conn, self._team
        if version == 1:
            fresh = conn.execute(
                "INSERT INTO teams (team, registered_at) VALUES (%s, %s) "
                "ON CONFLICT (team) DO NOTHING",
                (team, now_ms),
            )
            if fresh.rowcount != 1:
                raise Conflict(f"team {team} is already registered")
        elif self.generation is None:
            raise Conflict(f"team {team} is not registered; roster v{version} needs v1 first")
        charge(conn, self._quota, team, TEAM_OWNER, len(data), control=True)
        stored = conn.execute(
            "INSERT INTO rosters (team, version, data, stored_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (team, version) DO NOTHING",
            (team, version, data, now_ms),
        )
        if stored.rowcount != 1:
            raise Conflict(f"team {team} already holds roster v{version}")
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO members (team, kid, sign_public) VALUES (%s, %s, %s) "
                "ON CONFLICT (team, kid) DO UPDATE SET sign_public = excluded.sign_public",
                [(team, kid, pub) for kid, pub in members],
            )
        for k in keyrings:
            self.put_keyring(k, now_ms)
        self._change("roster", now_ms, None, None, version, bump=True)

    def put_keyring(self, keyring: KeyringBlob, now_ms: int) -> None:
        conn, team = self._conn, self._team
        old = conn.execute(
            "SELECT roster_version, data FROM keyrings WHERE team = %s AND project = %s "
            "AND epoch = %s",
            (team, keyring.project, keyring.epoch),
        ).fetchone()
        where = f"keyring {keyring.project}/{keyring.epoch}"
        if old is not None:
            stored_version, stored = int(old[0]), bytes(old[1])
            if stored == keyring.data:
                return
            if stored_version > keyring.roster_version:
                raise Conflict(
                    f"{where}: the stored one cites roster v{stored_version}, "
                    f"newer than v{keyring.roster_version}",
                    stale=True,
                )
            if stored_version == keyring.roster_version:
                raise Conflict(f"{where}: another one citing v{stored_version} is stored")
        delta = len(keyring.data) - (len(bytes(old[1])) if old is not None else 0)
        charge(conn, self._quota, team, TEAM_OWNER, delta, control=True)
        swapped = conn.execute(
            "INSERT INTO keyrings (team, project, epoch, roster_version, data, stored_at) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (team, project, epoch) DO UPDATE "
            "SET roster_version = excluded.roster_version, data = excluded.data, "
            "stored_at = excluded.stored_at "
            "WHERE excluded.roster_version > keyrings.roster_version",
            (team, keyring.project, keyring.epoch, keyring.roster_version, keyring.data, now_ms),
        )
        if swapped.rowcount != 1:
            raise Conflict(f"{where}: a keyring citing a newer roster was stored", stale=True)
        self._change("keyring", now_ms, keyring.project, None, keyring.epoch, bump=True)

    def put_manifest(
        self,
        head: StoredHead,
        data: bytes,
        chunk_ids: Sequence[str],
        keep: int,
        now_ms: int,
        base: tuple[int, str] | None = None,
    ) -> None:
        conn = self._conn
        slot = (self._team, head.project, head.writer)
        swapped = conn.execute(
            "INSERT INTO slots (team, project, writer, seq) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (team, project, writer) DO UPDATE SET seq = excluded.seq "
            "WHERE excluded.seq > slots.seq",
            (*slot, head.seq),
        )
        if swapped.rowcount != 1:
            row = conn.execute(
                "SELECT seq FROM slots WHERE team = %s AND project = %s AND writer = %s", slot
            ).fetchone()
            raise StaleSeq(int(row[0]) if row else head.seq)
        wanted = sorted(set(chunk_ids))
        if wanted:
            have = {
                str(r[0])
                for r in conn.execute(
                    "SELECT id FROM chunks WHERE team = %s AND project = %s AND writer = %s "
                    "AND id = ANY(%s)",
                    (*slot, wanted),
                ).fetchall()
            }
            missing = [i for i in wanted if i not in have]
            if missing:
                raise MissingChunks(missing)
        if (
            base is not None
            and conn.execute(
                "SELECT 1 FROM manifests WHERE team = %s AND project = %s AND writer = %s "
                "AND seq = %s AND hash = %s",
                (*slot, *base),
            ).fetchone()
            is None
        ):
            raise MissingBase(base[0])
        newest = [
            bytes(row[0])
            for row in conn.execute(
                "SELECT data FROM manifests WHERE team = %s AND project = %s AND writer = %s "
                "ORDER BY seq DESC LIMIT %s",
                (*slot, max(keep - 1, 0)),
            ).fetchall()
        ]
        older = [
            (int(s), int(n))
            for s, n in conn.execute(
                "SELECT seq, octet_length(data) FROM manifests WHERE team = %s AND project = %s "
                "AND writer = %s ORDER BY seq DESC OFFSET %s",
                (*slot, max(keep - 1, 0)),
            ).fetchall()
        ]
        old = manifests_to_drop(newest, older, base)  # a kept delta keeps its base
        charge(
            conn, self._quota, self._team, head.writer,
            len(data) - sum(int(n) for _, n in old),
        )  # fmt: skip
        self._delete_manifests(head.writer, [(head.project, int(s)) for s, _ in old])
        conn.execute(
            "INSERT INTO manifests (team, project, writer, seq, hash, reset_at, data, "
            "stored_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (*slot, head.seq, head.hash, head.reset_at, data, now_ms),
        )
        if wanted:
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO manifest_chunks (team, project, writer, id, seq) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    [(*slot, i, head.seq) for i in wanted],
                )
        self._change("manifest", now_ms, head.project, head.writer, head.seq, bump=False)

    def _delete_manifests(self, writer: str, which: Sequence[tuple[str, int]]) -> None:
        for project, seq in which:
            key = (self._team, project, writer, seq)
            self._conn.execute(
                "DELETE FROM manifests WHERE team = %s AND project = %s AND writer = %s "
                "AND seq = %s",
                key,
            )
            self._conn.execute(
                "DELETE FROM manifest_chunks WHERE team = %s AND project = %s AND writer = %s "
                "AND seq = %s",
                key,
            )

    def drop_writer(self, writer: str, pins: Mapping[str, int]) -> int:
        rows = self._conn.execute(
            "SELECT project, seq, octet_length(data) FROM manifests WHERE team = %s "
            "AND writer = %s",
            (self._team, writer),
        ).fetchall()
        keep = set(pins.items())
        for project, seq in pins.items():  # a pinned delta: its base stays readable
            row = self._conn.execute(
                "SELECT data FROM manifests WHERE team = %s AND project = %s "
                "AND writer = %s AND seq = %s",
                (self._team, project, writer, seq),
            ).fetchone()
            base = None if row is None else delta_base(bytes(row[0]))
            if base is not None:
                keep.add((project, base))
        gone = [(str(p), int(s), int(n)) for p, s, n in rows if (str(p), int(s)) not in keep]
        self._delete_manifests(writer, [(p, s) for p, s, _ in gone])
        charge(self._conn, None, self._team, writer, -sum(n for _, _, n in gone))
        return len(gone)
