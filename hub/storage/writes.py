"""A team's write transaction on SQLite (:class:`sealmem.hub.storage.TeamWrite`).

Runs inside ``BEGIN IMMEDIATE`` (opened by :meth:`SQLiteStorage.write`), which
is the team's write lock: nothing else writes the database until it commits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence

from . import (
    TEAM_OWNER,
    Conflict,
    KeyringBlob,
    MissingBase,
    MissingChunks,
    Quota,
    StaleSeq,
    StoredHead,
    TeamWrite,
    delta_base,
    manifests_to_drop,
)

__all__ = ["SQLiteTeamWrite", "charge"]


def _member_bytes(conn: sqlite3.Connection, team: str, member: str) -> int:
    row = conn.execute(
        "SELECT bytes FROM usage WHERE team = ? AND member = ?", (team, member)
    ).fetchone()
    return int(row[0]) if row else 0


def charge(
    conn: sqlite3.Connection,
    quota: Quota | None,
    team: str,
    member: str,
    delta: int,
    *,
    control: bool = False,
) -> None:
    """Add ``delta`` bytes to (team, member); a growth is checked against ``quota``
    (``control``: a roster or keyring, which may use the reserve)."""
    if quota is not None:
        quota.check(
            team,
            member,
            delta,
            lambda: int(
                conn.execute(
                    "SELECT COALESCE(SUM(bytes), 0) FROM usage WHERE team = ?", (team,)
                ).fetchone()[0]
            ),
            lambda: _member_bytes(conn, team, member),
            control=control,
        )
    if delta:
        conn.execute(
            "INSERT INTO usage (team, member, bytes) VALUES (?, ?, ?) "
            "ON CONFLICT (team, member) DO UPDATE SET bytes = bytes + excluded.bytes",
            (team, member, delta),
        )


class SQLiteTeamWrite(TeamWrite):
    def __init__(self, conn: sqlite3.Connection, team: str, quota: Quota) -> None:
        self._conn = conn
        self._team = team
        self._quota = quota

    @property
    def generation(self) -> int | None:
        row = self._conn.execute(
            "SELECT generation FROM teams WHERE team = ?", (self._team,)
        ).fetchone()
        return None if row is None else int(row[0])

    @staticmethod
    def read_heads(conn: sqlite3.Connection, team: str) -> list[StoredHead]:
        rows = conn.execute(
            "SELECT project, writer, seq, hash, reset_at FROM manifests m WHERE team = ? AND "
            "seq = (SELECT MAX(seq) FROM manifests n WHERE n.team = m.team AND "
            "n.project = m.project AND n.writer = m.writer)",
            (team,),
        ).fetchall()
        return [StoredHead(str(p), str(w), int(s), str(h), int(r)) for p, w, s, h, r in rows]

    def heads(self) -> list[StoredHead]:
        return self.read_heads(self._conn, self._team)

    def heads_of(self, slots: Iterable[tuple[str, str]]) -> list[StoredHead]:
        out: list[StoredHead] = []
        for project, writer in sorted(set(slots)):
            row = self._conn.execute(
                "SELECT seq, hash, reset_at FROM manifests WHERE team = ? AND project = ? "
                "AND writer = ? ORDER BY seq DESC LIMIT 1",
                (self._team, project, writer),
            ).fetchone()
            if row is not None:
                out.append(StoredHead(project, writer, int(row[0]), str(row[1]), int(row[2])))
        return out

    def _change(
        self, kind: str, now_ms: int, project: str | None, writer: str | None, seq: int | None,
        *, bump: bool,
    ) -> None:  # fmt: skip
        row = self._conn.execute(
            "UPDATE teams SET cursor = cursor + 1, generation = generation + ? WHERE team = ? "
            "RETURNING cursor",
            (1 if bump else 0, self._team),
        ).fetchone()
        self._conn.execute(
            "INSERT INTO changes (team, cursor, kind, project, writer, seq, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self._team, int(row[0]), kind, project, writer, seq, now_ms),
        )

    def put_roster(
        self,
        version: int,
        data: bytes,
        members: Sequence[tuple[str, bytes]],
        keyrings: Sequence[KeyringBlob],
        now_ms: int,
    ) -> None:
        conn, team = self._conn, self._team
        exists = self.generation is not None
        if version == 1 and exists:
            raise Conflict(f"team {team} is already registered")
        if version != 1 and not exists:
            raise Conflict(f"team {team} is not registered; roster v{version} needs v1 first")
        if conn.execute(
            "SELECT 1 FROM rosters WHERE team = ? AND version = ?", (team, version)
        ).fetchone():
            raise Conflict(f"team {team} already holds roster v{version}")
        if version == 1:
            conn.execute(
                "INSERT INTO teams (team, registered_at, cursor, generation) VALUES (?, ?, 0, 0)",
                (team, now_ms),
            )
        charge(conn, self._quota, team, TEAM_OWNER, len(data), control=True)
        conn.execute(
            "INSERT INTO rosters (team, version, data, stored_at) VALUES (?, ?, ?, ?)",
            (team, version, data, now_ms),
        )
        conn.executemany(
            "INSERT OR REPLACE INTO members (team, kid, sign_public) VALUES (?, ?, ?)",
            [(team, kid, pub) for kid, pub in members],
        )
        for k in keyrings:
            self.put_keyring(k, now_ms)
        self._change("roster", now_ms, None, None, version, bump=True)

    def put_keyring(self, keyring: KeyringBlob, now_ms: int) -> None:
        conn, team = self._conn, self._team
        old = conn.execute(
            "SELECT roster_version, data FROM keyrings WHERE team = ? AND project = ? "
            "AND epoch = ?",
            (team, keyring.project, keyring.epoch),
        ).fetchone()
        where = f"keyring {keyring.project}/{keyring.epoch}"
        if old is not None:
            stored_version, stored = int(old[0]), bytes(old[1])
            if stored_version > keyring.roster_version:
                raise Conflict(
                    f"{where}: the stored one cites roster v{stored_version}, "
                    f"newer than v{keyring.roster_version}",
                    stale=True,
                )
            if stored_version == keyring.roster_version and stored != keyring.data:
                raise Conflict(f"{where}: another one citing v{stored_version} is stored")
            if stored == keyring.data:
                return
        delta = len(keyring.data) - (len(bytes(old[1])) if old is not None else 0)
        charge(conn, self._quota, team, TEAM_OWNER, delta, control=True)
        conn.execute(
            "INSERT OR REPLACE INTO keyrings (team, project, epoch, data, stored_at, "
            "roster_version) VALUES (?, ?, ?, ?, ?, ?)",
            (team, keyring.project, keyring.epoch, keyring.data, now_ms, keyring.roster_version),
        )
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
        row = conn.execute(
            "SELECT MAX(seq) FROM manifests WHERE team = ? AND project = ? AND writer = ?", slot
        ).fetchone()
        if row[0] is not None and int(row[0]) >= head.seq:
            raise StaleSeq(int(row[0]))
        wanted = sorted(set(chunk_ids))
        missing = [
            i
            for i in wanted
            if conn.execute(
                "SELECT 1 FROM chunks WHERE team = ? AND project = ? AND writer = ? AND id = ?",
                (*slot, i),
            ).fetchone()
            is None
        ]
        if missing:
            raise MissingChunks(missing)
        if (
            base is not None
            and conn.execute(
                "SELECT 1 FROM manifests WHERE team = ? AND project = ? AND writer = ? AND seq = ? "
                "AND hash = ?",
                (*slot, *base),
            ).fetchone()
            is None
        ):
            raise MissingBase(base[0])
        newest = [
            bytes(row[0])
            for row in conn.execute(
                "SELECT data FROM manifests WHERE team = ? AND project = ? AND writer = ? "
                "ORDER BY seq DESC LIMIT ?",
                (*slot, max(keep - 1, 0)),
            ).fetchall()
        ]
        older = [
            (int(s), int(n))
            for s, n in conn.execute(
                "SELECT seq, LENGTH(data) FROM manifests WHERE team = ? AND project = ? "
                "AND writer = ? ORDER BY seq DESC LIMIT -1 OFFSET ?",
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
            "stored_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*slot, head.seq, head.hash, head.reset_at, data, now_ms),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO manifest_chunks (team, project, writer, id, seq) "
            "VALUES (?, ?, ?, ?, ?)",
            [(*slot, i, head.seq) for i in wanted],
        )
        self._change("manifest", now_ms, head.project, head.writer, head.seq, bump=False)

    def _delete_manifests(self, writer: str, which: Sequence[tuple[str, int]]) -> None:
        for project, seq in which:
            key = (self._team, project, writer, seq)
            self._conn.execute(
                "DELETE FROM manifests WHERE team = ? AND project = ? AND writer = ? AND seq = ?",
                key,
            )
            self._conn.execute(
                "DELETE FROM manifest_chunks WHERE team = ? AND project = ? AND writer = ? "
                "AND seq = ?",
                key,
            )

    def drop_writer(self, writer: str, pins: Mapping[str, int]) -> int:
        rows = self._conn.execute(
            "SELECT project, seq, LENGTH(data) FROM manifests WHERE team = ? AND writer = ?",
            (self._team, writer),
        ).fetchall()
        keep = set(pins.items())
        for project, seq in pins.items():  # a pinned delta: its base stays readable
            row = self._conn.execute(
                "SELECT data FROM manifests WHERE team = ? AND project = ? "
                "AND writer = ? AND seq = ?",
                (self._team, project, writer, seq),
            ).fetchone()
            base = None if row is None else delta_base(bytes(row[0]))
            if base is not None:
                keep.add((project, base))
        gone = [(str(p), int(s), int(n)) for p, s, n in rows if (str(p), int(s)) not in keep]
        self._delete_manifests(writer, [(p, s) for p, s, _ in gone])
        charge(self._conn, None, self._team, writer, -sum(n for _, _, n in gone))
        return len(gone)
