"""What SQLite and PostgreSQL spell differently, in one place.

The metadata statements and rules are written once (:mod:`.sql`, :mod:`.writes`),
in the SQL both engines accept: ``?`` placeholders, ``INSERT ... ON CONFLICT``,
``RETURNING``, ``LENGTH`` of a blob, row values.  A :class:`Dialect` holds the rest:

- the compare-and-swap on a writer's seq (:meth:`Dialect.swap_seq`): one rule,
  "a manifest is stored only above the slot's newest seq", spelled as a read of
  the newest seq under SQLite's database-wide write lock, and as a conditional
  upsert of the ``slots`` row on PostgreSQL, which holds even if two writers raced;
- the locking: a PostgreSQL transaction takes each team's advisory lock
  (:meth:`Dialect.lock`); an SQLite write holds the database's one write lock
  (``BEGIN IMMEDIATE``, taken by :mod:`.dbfile`), which covers every team;
- what follows a recorded change: PostgreSQL notifies the other replicas
  (:meth:`Dialect.changed`, delivered on commit), and a revoked writer's dropped
  manifests: PostgreSQL's ``slots`` follow (:meth:`Dialect.dropped`).

Each engine maps its own errors to :class:`~sealmem.hub.storage.values.StorageError`
where its connections are (:mod:`.dbfile`, :mod:`.postgres`): no statement here
or in the shared layer sees a driver's exception.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from .feed import NOTIFY_CHANNEL

__all__ = ["POSTGRES", "SQLITE", "Conn", "Dialect", "Slot"]

#: (team, project, writer): one writer's manifests in one project
Slot = tuple[str, str, str]


class Conn(Protocol):
    """What the shared statements need of a connection inside a transaction (an
    ``sqlite3.Connection``, or :class:`~sealmem.hub.storage.postgres.PgConn`)."""

    def execute(self, sql: str, args: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Any: ...


class Dialect:
    """SQLite's spelling; :class:`_Postgres` overrides what PostgreSQL spells otherwise."""

    def swap_seq(self, conn: Conn, slot: Slot, seq: int) -> int | None:
        """Take ``seq`` as the slot's newest, or return the newest it already holds (at
        or above ``seq``: the compare-and-swap is lost, nothing changed)."""
        row = conn.execute(
            "SELECT MAX(seq) FROM manifests WHERE team = ? AND project = ? AND writer = ?", slot
        ).fetchone()
        current = None if row[0] is None else int(row[0])
        return current if current is not None and current >= seq else None

    def lock(self, conn: Conn, teams: Iterable[str]) -> None:
        """Hold the write locks of ``teams`` until the transaction ends (SQLite's
        ``BEGIN IMMEDIATE`` already holds the whole database)."""

    def changed(self, conn: Conn, team: str) -> None:
        """A change of ``team`` was recorded in this transaction."""

    def dropped(self, conn: Conn, team: str, writer: str) -> None:
        """``writer``'s manifests were deleted but for its pins: what a slot's newest seq
        is kept in follows (SQLite reads it from the manifests themselves)."""


class _Postgres(Dialect):
    def swap_seq(self, conn: Conn, slot: Slot, seq: int) -> int | None:
        swapped = conn.execute(
            "INSERT INTO slots (team, project, writer, seq) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (team, project, writer) DO UPDATE SET seq = excluded.seq "
            "WHERE excluded.seq > slots.seq",
            (*slot, seq),
        )
        if swapped.rowcount == 1:
            return None
        row = conn.execute(
            "SELECT seq FROM slots WHERE team = ? AND project = ? AND writer = ?", slot
        ).fetchone()
        return int(row[0]) if row else seq

    def lock(self, conn: Conn, teams: Iterable[str]) -> None:
        # in sorted order, so two transactions never wait on each other in a cycle
        for team in sorted(set(teams)):
            digest = hashlib.blake2b(f"sealmem/team\x00{team}".encode(), digest_size=8).digest()
            conn.execute(
                "SELECT pg_advisory_xact_lock(?)", (int.from_bytes(digest, "big", signed=True),)
            )

    def changed(self, conn: Conn, team: str) -> None:
        conn.execute("SELECT pg_notify(?, ?)", (NOTIFY_CHANNEL, team))

    def dropped(self, conn: Conn, team: str, writer: str) -> None:
        conn.execute("DELETE FROM slots WHERE team = ? AND writer = ?", (team, writer))
        conn.execute(
            "INSERT INTO slots (team, project, writer, seq) SELECT team, project, writer, "
            "MAX(seq) FROM manifests WHERE team = ? AND writer = ? GROUP BY team, project, writer",
            (team, writer),
        )


SQLITE = Dialect()
POSTGRES: Dialect = _Postgres()
