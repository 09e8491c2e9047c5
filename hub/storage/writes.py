"""A team's write transaction (:class:`TeamWrite`), in SQL for both engines.

It runs inside a transaction that holds the team's write lock (opened by
:meth:`Storage.write <sealmem.hub.storage.sql.Storage.write>`): nothing
else writes the team until it commits, so what the caller verified inside is
still true then.  The compare-and-swaps do not rely on the lock alone where a
statement can carry them: a roster version is inserted once, a keyring replaced
only by one citing a newer roster, and a writer's seq swapped by the dialect's
one rule (:meth:`~sealmem.hub.storage.dialect.Dialect.swap_seq`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .dialect import Conn, Dialect, Slot
from .values import (
    TEAM_OWNER,
    Conflict,
    KeyringBlob,
    MissingBase,
    MissingChunks,
    Quota,
    StaleSeq,
    StorageError,
    StoredHead,
    delta_base,
    manifests_to_drop,
)

__all__ = ["MEMBER_BYTES", "PART", "TEAM_BYTES", "TeamWrite", "charge", "missing_ids"]

#: ids in one ``IN (...)`` list (SQLite allows 32766 parameters a statement)
PART = 500

_NEWEST = (
    "m.seq = (SELECT MAX(seq) FROM manifests n WHERE n.team = m.team AND "
    "n.project = m.project AND n.writer = m.writer)"
)
#: the newest manifest of each slot of a ``VALUES`` list ({}: its rows), then the team:
#: one index lookup a slot named, however many slots the team has
_HEADS_OF = (
    "SELECT m.project, m.writer, m.seq, m.hash, m.reset_at FROM (VALUES {}) AS s "
    "JOIN manifests m ON m.team = ? AND m.project = s.column1 AND m.writer = s.column2 "
    f"AND {_NEWEST}"
)

_SLOT = "team = ? AND project = ? AND writer = ?"

Rows = list[tuple[Any, ...]]

#: the bytes a team holds, and one member of it (no row: none)
TEAM_BYTES = "SELECT COALESCE(SUM(bytes), 0) FROM usage WHERE team = ?"
MEMBER_BYTES = "SELECT bytes FROM usage WHERE team = ? AND member = ?"


def missing_ids(
    read: Callable[[str, Sequence[object]], Rows], slot: Slot, ids: Iterable[str]
) -> list[str]:
    """The ids among ``ids`` the slot holds no chunk row for, sorted."""
    wanted = sorted(set(ids))
    have: set[str] = set()
    for i in range(0, len(wanted), PART):
        part = wanted[i : i + PART]
        marks = ", ".join("?" * len(part))
        rows = read(f"SELECT id FROM chunks WHERE {_SLOT} AND id IN ({marks})", (*slot, *part))
        have.update(str(r[0]) for r in rows)
    return [i for i in wanted if i not in have]


def charge(
    conn: Conn,
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

        def used(sql: str, *args: str) -> int:
            row = conn.execute(sql, (team, *args)).fetchone()
            return int(row[0]) if row else 0

        team_used, member_used = (lambda: used(TEAM_BYTES)), (lambda: used(MEMBER_BYTES, member))
        quota.check(team, member, delta, team_used, member_used, control=control)
    if delta:
        conn.execute(
            "INSERT INTO usage (team, member, bytes) VALUES (?, ?, ?) "
            "ON CONFLICT (team, member) DO UPDATE SET bytes = usage.bytes + excluded.bytes",
            (team, member, delta),
        )


class TeamWrite:
    """One transaction holding a team's write lock (see :meth:`Storage.write
    <sealmem.hub.storage.sql.Storage.write>`)."""

    def __init__(self, conn: Conn, team: str, quota: Quota, dialect: Dialect) -> None:
        self._conn = conn
        self._team = team
        self._quota = quota
        self._dialect = dialect

    def _rows(self, sql: str, args: Sequence[object]) -> Rows:
        return list(self._conn.execute(sql, args).fetchall())

    @property
    def generation(self) -> int | None:
        """The team's generation as this transaction sees it; None: not registered."""
        row = self._conn.execute(
            "SELECT generation FROM teams WHERE team = ?", (self._team,)
        ).fetchone()
        return None if row is None else int(row[0])

    def heads_of(self, slots: Iterable[tuple[str, str]]) -> list[StoredHead]:
        """The newest manifest of each (project, writer) slot named (those that have one):
        what a manifest's verification needs, read without reading every slot's."""
        wanted = sorted(set(slots))
        found: list[StoredHead] = []
        for i in range(0, len(wanted), PART):
            part = wanted[i : i + PART]
            marks = ", ".join(["(?, ?)"] * len(part))
            flat = [name for pair in part for name in pair]
            rows = self._rows(_HEADS_OF.format(marks), (*flat, self._team))
            found += [StoredHead(str(p), str(w), int(s), str(h), int(r)) for p, w, s, h, r in rows]
        return found

    def manifest_at(self, project: str, writer: str, seq: int, digest: str) -> bytes | None:
        """The slot's kept manifest ``seq`` whose object hash is ``digest`` (a delta's base)."""
        rows = self._rows(
            f"SELECT data FROM manifests WHERE {_SLOT} AND seq = ? AND hash = ?",
            (self._team, project, writer, seq, digest),
        )
        return bytes(rows[0][0]) if rows else None

    def _change(
        self, kind: str, now_ms: int, project: str | None, writer: str | None, seq: int | None,
        *, bump: bool,
    ) -> None:  # fmt: skip
        """Append to the team's feed: the next cursor of its row (rosters and keyrings
        also bump its generation)."""
        row = self._conn.execute(
            "UPDATE teams SET cursor = cursor + 1, generation = generation + ? WHERE team = ? "
            "RETURNING cursor",
            (1 if bump else 0, self._team),
        ).fetchone()
        if row is None:
            raise StorageError(f"team {self._team} has no row: its change cannot be recorded")
        self._conn.execute(
            "INSERT INTO changes (team, cursor, kind, project, writer, seq, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (self._team, int(row[0]), kind, project, writer, seq, now_ms),
        )
        self._dialect.changed(self._conn, self._team)

    def put_roster(
        self,
        version: int,
        data: bytes,
        members: Sequence[tuple[str, bytes]],
        keyrings: Sequence[KeyringBlob],
        now_ms: int,
    ) -> None:
        """Store a verified roster version (v1 registers the team), the (kid, sign_public)
        of its members and the keyrings citing it; :class:`Conflict` if the version (or
        at v1 the team) is already there.  Control objects: they may use the reserve."""
        conn, team = self._conn, self._team
        if version == 1:
            fresh = conn.execute(
                "INSERT INTO teams (team, registered_at) VALUES (?, ?) "
                "ON CONFLICT (team) DO NOTHING",
                (team, now_ms),
            )
            if fresh.rowcount != 1:
                raise Conflict(f"team {team} is already registered")
        elif self.generation is None:
            raise Conflict(f"team {team} is not registered; roster v{version} needs v1 first")
        stored = conn.execute(
            "INSERT INTO rosters (team, version, data, stored_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (team, version) DO NOTHING",
            (team, version, data, now_ms),
        )
        if stored.rowcount != 1:
            raise Conflict(f"team {team} already holds roster v{version}")
        charge(conn, self._quota, team, TEAM_OWNER, len(data), control=True)
        conn.executemany(
            "INSERT INTO members (team, kid, sign_public) VALUES (?, ?, ?) "
            "ON CONFLICT (team, kid) DO UPDATE SET sign_public = excluded.sign_public",
            [(team, kid, pub) for kid, pub in members],
        )
        for k in keyrings:
            self.put_keyring(k, now_ms)
        self._change("roster", now_ms, None, None, version, bump=True)

    def put_checkpoint(self, seq: int, data: bytes, now_ms: int) -> None:
        """Keep a verified checkpoint as the team's newest; :class:`Conflict` (``stale``)
        if the one held has a ``seq`` at or above it (compare-and-swap)."""
        stored = self._conn.execute(
            "INSERT INTO checkpoints (team, seq, data, stored_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (team) DO UPDATE SET seq = excluded.seq, data = excluded.data, "
            "stored_at = excluded.stored_at WHERE checkpoints.seq < excluded.seq",
            (self._team, seq, data, now_ms),
        )
        if stored.rowcount != 1:
            raise Conflict(f"team {self._team} holds checkpoint {seq} or a newer one", stale=True)

    def put_keyring(self, keyring: KeyringBlob, now_ms: int) -> None:
        """Store a verified keyring; :class:`Conflict` if the stored one for its
        (project, epoch) cites a newer roster, or the same roster with other bytes."""
        conn, team = self._conn, self._team
        old = conn.execute(
            "SELECT roster_version, data FROM keyrings WHERE team = ? AND project = ? "
            "AND epoch = ?",
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
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (team, project, epoch) DO UPDATE "
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
        """Store a verified manifest naming ``chunk_ids`` if ``head.seq`` is above the
        slot's newest (else :class:`StaleSeq`) and the slot holds every chunk (else
        :class:`MissingChunks`); keep the ``keep`` newest of the slot.  A delta names its
        ``base`` (seq, hash): the slot must hold that manifest (else :class:`MissingBase`),
        and keeps it besides the ``keep`` newest."""
        conn = self._conn
        slot = (self._team, head.project, head.writer)
        current = self._dialect.swap_seq(conn, slot, head.seq)
        if current is not None:
            raise StaleSeq(current)
        wanted = sorted(set(chunk_ids))
        missing = missing_ids(self._rows, slot, wanted)
        if missing:
            raise MissingChunks(missing)
        if base is not None and not self._rows(
            f"SELECT 1 FROM manifests WHERE {_SLOT} AND seq = ? AND hash = ?", (*slot, *base)
        ):
            raise MissingBase(base[0])
        # the keep - 1 newest stay; of the others, a base of a kept delta stays too
        kept = max(keep - 1, 0)
        order = f"FROM manifests WHERE {_SLOT} ORDER BY seq DESC"
        newest = [bytes(r[0]) for r in self._rows(f"SELECT data {order} LIMIT ?", (*slot, kept))]
        sizes = [(int(s), int(n)) for s, n in self._rows(f"SELECT seq, LENGTH(data) {order}", slot)]
        old = manifests_to_drop(newest, sizes[kept:], base)
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
        if wanted:
            conn.executemany(
                "INSERT INTO manifest_chunks (team, project, writer, id, seq) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [(*slot, i, head.seq) for i in wanted],
            )
        self._change("manifest", now_ms, head.project, head.writer, head.seq, bump=False)

    def _delete_manifests(self, writer: str, which: Sequence[tuple[str, int]]) -> None:
        for project, seq in which:
            key = (self._team, project, writer, seq)
            for table in ("manifests", "manifest_chunks"):
                self._conn.execute(f"DELETE FROM {table} WHERE {_SLOT} AND seq = ?", key)

    def drop_writer(self, writer: str, pins: Mapping[str, int]) -> int:
        """A revoked writer: delete its manifests except, per project, the pinned seq
        in ``pins``; count them.  Its chunks no kept manifest names become unreferenced
        (:meth:`Storage.drop_unreferenced` removes them after the commit)."""
        rows = self._rows(
            "SELECT project, seq, LENGTH(data) FROM manifests WHERE team = ? AND writer = ?",
            (self._team, writer),
        )
        keep = set(pins.items())
        for project, seq in pins.items():  # a pinned delta: its base stays readable
            row = self._rows(
                f"SELECT data FROM manifests WHERE {_SLOT} AND seq = ?",
                (self._team, project, writer, seq),
            )
            base = None if not row else delta_base(bytes(row[0][0]))
            if base is not None:
                keep.add((project, base))
        gone = [(str(p), int(s), int(n)) for p, s, n in rows if (str(p), int(s)) not in keep]
        self._delete_manifests(writer, [(p, s) for p, s, _ in gone])
        self._dialect.dropped(self._conn, self._team, writer)
        charge(self._conn, None, self._team, writer, -sum(n for _, _, n in gone))
        return len(gone)
