"""The hub's schemas, SQLite's and PostgreSQL's, and their forward-only upgraders.

SQLite: the version is ``PRAGMA user_version``; :func:`set_up` creates or
upgrades ``hub.db``, :func:`set_up_nonces` creates the nonce file (version 1).

- version 1 (no ``user_version``): the first hub's layout (commit c8031a9); one
  global change cursor, usage per team only, keyrings without their roster version.
- version 2: per-team cursor and generation on the team row; changes keyed by
  (team, cursor); usage per (team, member); keyrings with the roster version
  they cite; which chunks each kept manifest names; a nonce table.
- version 3: the nonce table moves to a file of its own (:mod:`.nonces`), so
  that a request's nonce insert never waits for a push's durable commit; the
  nonces still inside their window are handed to that file before the table is
  dropped.
- version 4: ``checkpoints``, the team's newest admin-signed checkpoint (SPEC.md
  "Checkpoint"), one row per team.

Upgrades are forward only, one transaction each (version 1 goes straight to
version 3, with no nonce table to hand over).  Cursors already handed out
are kept: a team's counter goes on from its newest, so a reader's cursor stays
valid.  Values the old layout lacked are recomputed from the stored objects.

PostgreSQL: ``schema_version`` holds one row, the version the database is at.
Each entry of :data:`PG_MIGRATIONS` brings it one version further.
:func:`upgrade_pg` applies the missing ones in one transaction under a
transaction-scoped advisory lock, so replicas that start at the same moment
upgrade once and the others wait and then find the work done.  A database
written by a newer hub (a version above the last one known here) is refused
rather than guessed at.

Both engines keep a team's ``cursor`` and ``generation`` on its ``teams`` row
(see :mod:`sealmem.hub.storage`), ``usage`` per (team, member), and in
``manifest_chunks`` which chunks the kept manifests name.  PostgreSQL also keeps
``slots``, each writer's newest seq (the compare-and-swap target of a manifest
write, see :mod:`.dialect`), and ``nonces`` and ``rate_buckets``, shared by every
replica.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

from ...protocol.errors import Rejected
from ...protocol.keyring import peek as keyring_peek
from ...protocol.manifest import peek
from .values import TEAM_OWNER, StorageError

__all__ = [
    "NONCE_SCHEMA_VERSION",
    "PG_MIGRATIONS",
    "SCHEMA_LOCK",
    "SCHEMA_VERSION",
    "set_up",
    "set_up_nonces",
    "upgrade_pg",
]

SCHEMA_VERSION = 4
#: the nonce file's (``hub-nonces.db``): its one version
NONCE_SCHEMA_VERSION = 1

#: (kid, nonce, expires_ms) rows of the version 2 nonce table, handed over
Nonces = list[tuple[str, str, int]]

#: The tables of both engines today, with each engine's names for a 64-bit integer and
#: a blob, SQLite's ``WITHOUT ROWID`` where a table has no use for a rowid, and the
#: keyrings columns in the order each engine's databases already hold them (SQLite's
#: version 2 added ``roster_version`` last): one schema version, one layout.
_LAYOUT = """
CREATE TABLE teams (
    team TEXT PRIMARY KEY, registered_at {int} NOT NULL,
    cursor {int} NOT NULL DEFAULT 0, generation {int} NOT NULL DEFAULT 0);
CREATE TABLE usage (
    team TEXT NOT NULL, member TEXT NOT NULL, bytes {int} NOT NULL,
    PRIMARY KEY (team, member));
CREATE TABLE rosters (
    team TEXT NOT NULL, version {int} NOT NULL, data {blob} NOT NULL, stored_at {int} NOT NULL,
    PRIMARY KEY (team, version));
CREATE TABLE members (
    team TEXT NOT NULL, kid TEXT NOT NULL, sign_public {blob} NOT NULL, PRIMARY KEY (team, kid));
CREATE INDEX members_kid ON members (kid);
CREATE TABLE keyrings (
    team TEXT NOT NULL, project TEXT NOT NULL, epoch {int} NOT NULL, {keyring},
    PRIMARY KEY (team, project, epoch));
CREATE TABLE manifests (
    team TEXT NOT NULL, project TEXT NOT NULL, writer TEXT NOT NULL, seq {int} NOT NULL,
    hash TEXT NOT NULL, reset_at {int} NOT NULL, data {blob} NOT NULL, stored_at {int} NOT NULL,
    PRIMARY KEY (team, project, writer, seq));
CREATE TABLE manifest_chunks (
    team TEXT NOT NULL, project TEXT NOT NULL, writer TEXT NOT NULL, id TEXT NOT NULL,
    seq {int} NOT NULL, PRIMARY KEY (team, project, writer, id, seq)){rowid};
CREATE TABLE chunks (
    team TEXT NOT NULL, project TEXT NOT NULL, writer TEXT NOT NULL, id TEXT NOT NULL,
    size {int} NOT NULL, stored_at {int} NOT NULL, PRIMARY KEY (team, project, writer, id));
CREATE INDEX chunks_stored ON chunks (stored_at);
CREATE TABLE requests (
    team TEXT NOT NULL, kid TEXT NOT NULL, data {blob} NOT NULL, stored_at {int} NOT NULL,
    address TEXT NOT NULL DEFAULT '', PRIMARY KEY (team, kid));
CREATE TABLE changes (
    team TEXT NOT NULL, cursor {int} NOT NULL, kind TEXT NOT NULL,
    project TEXT, writer TEXT, seq {int}, at {int} NOT NULL,
    PRIMARY KEY (team, cursor)){rowid};
"""
_NONCES = """
CREATE TABLE nonces (
    kid TEXT NOT NULL, nonce TEXT NOT NULL, expires_ms {int} NOT NULL,
    PRIMARY KEY (kid, nonce)){rowid};
CREATE INDEX nonces_expiry ON nonces (expires_ms);
"""
#: the team's newest checkpoint (schema version 4 in SQLite, 2 in PostgreSQL)
_CHECKPOINTS = """
CREATE TABLE checkpoints (
    team TEXT PRIMARY KEY, seq {int} NOT NULL, data {blob} NOT NULL, stored_at {int} NOT NULL
){rowid};
"""
_SQLITE = {
    "int": "INTEGER",
    "blob": "BLOB",
    "rowid": " WITHOUT ROWID",
    "keyring": "data BLOB NOT NULL, stored_at INTEGER NOT NULL, "
    "roster_version INTEGER NOT NULL DEFAULT 0",
}
_TABLES = _LAYOUT.format(**_SQLITE) + _CHECKPOINTS.format(**_SQLITE)


def _tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {str(r[0]) for r in rows}


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _run(conn: sqlite3.Connection, script: str) -> None:
    """Each statement of ``script``, inside the transaction (``executescript`` would
    commit it first)."""
    for statement in _statements(script):
        conn.execute(statement)


def set_up(conn: sqlite3.Connection, adopt_nonces: Callable[[Nonces], None]) -> None:
    """Create the schema, or bring an older one up to :data:`SCHEMA_VERSION`;
    ``adopt_nonces`` stores (durably) the nonces of a version 2 table, before the
    upgrade drops it: a request seen before the upgrade stays refused after it."""
    version = _version(conn, SCHEMA_VERSION, "the hub database")
    if version == SCHEMA_VERSION:
        return
    if version == 2 and "nonces" in _tables(conn):
        rows = conn.execute("SELECT kid, nonce, expires_ms FROM nonces").fetchall()
        adopt_nonces([(str(k), str(n), int(e)) for k, n, e in rows])
    with _upgrading(conn, SCHEMA_VERSION):
        if version == 0 and _tables(conn) - {"sqlite_sequence"}:
            _upgrade_1(conn)
        elif version == 0:
            _run(conn, _TABLES)
        else:
            conn.execute("DROP TABLE IF EXISTS nonces")  # its index goes with it
            if version < 4:
                _run(conn, _CHECKPOINTS.format(**_SQLITE))


def set_up_nonces(conn: sqlite3.Connection) -> None:
    """Create the nonce file's table (:mod:`.nonces`), at :data:`NONCE_SCHEMA_VERSION`."""
    if _version(conn, NONCE_SCHEMA_VERSION, "the hub's nonce file") == 0:
        with _upgrading(conn, NONCE_SCHEMA_VERSION):
            _run(conn, _NONCES.format(**_SQLITE))


def _version(conn: sqlite3.Connection, newest: int, what: str) -> int:
    """The file's ``user_version``; a file of a newer hub is refused."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > newest:
        raise StorageError(
            f"{what} is at schema version {version}, newer than this hub ({newest}); "
            "run the newer sealmem hub, or restore a backup"
        )
    return version


@contextlib.contextmanager
def _upgrading(conn: sqlite3.Connection, version: int) -> Iterator[None]:
    """One transaction that leaves the file at ``version``, or as it was."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute(f"PRAGMA user_version = {version}")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _keyring_roster_version(data: bytes) -> int:
    try:
        return keyring_peek(data).roster_version
    except Rejected:
        return 0


def _manifest_chunks(data: bytes) -> list[str]:
    try:
        return [c.id for c in peek(data).listed]
    except Rejected:
        return []


def _upgrade_1(conn: sqlite3.Connection) -> None:
    """A version 1 directory, as the first hub left it (its every open created what its
    layout lacked), to the current layout; an old table's indexes go with it.  The
    first hub's earliest builds kept no ``requests.address``: it is added."""
    if "address" not in {str(row[1]) for row in conn.execute("PRAGMA table_info(requests)")}:
        conn.execute("ALTER TABLE requests ADD COLUMN address TEXT NOT NULL DEFAULT ''")
    for table in ("teams", "usage", "keyrings", "changes"):
        conn.execute(f"ALTER TABLE {table} RENAME TO old_{table}")
    wanted = ("teams", "usage", "keyrings", "manifest_chunks", "changes", "checkpoints")
    for statement in _statements(_TABLES):
        table = statement.split("(")[0].split()[-1]
        if statement.startswith("CREATE TABLE") and table in wanted:
            conn.execute(statement)
        elif statement.startswith("CREATE INDEX"):
            conn.execute(statement.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS"))
    conn.execute(
        "INSERT INTO changes (team, cursor, kind, project, writer, seq, at) "
        "SELECT team, cursor, kind, project, writer, seq, at FROM old_changes"
    )
    conn.execute(
        "INSERT INTO teams (team, registered_at, cursor, generation) "
        "SELECT t.team, t.registered_at, "
        "COALESCE((SELECT MAX(cursor) FROM old_changes c WHERE c.team = t.team), 0), 1 "
        "FROM old_teams t"
    )
    for team, project, epoch, data, stored_at in conn.execute(
        "SELECT team, project, epoch, data, stored_at FROM old_keyrings"
    ).fetchall():
        conn.execute(
            "INSERT INTO keyrings (team, project, epoch, data, stored_at, roster_version) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (team, project, epoch, data, stored_at, _keyring_roster_version(bytes(data))),
        )
    for team, project, writer, seq, data in conn.execute(
        "SELECT team, project, writer, seq, data FROM manifests"
    ).fetchall():
        conn.executemany(
            "INSERT OR IGNORE INTO manifest_chunks (team, project, writer, id, seq) "
            "VALUES (?, ?, ?, ?, ?)",
            [(team, project, writer, i, seq) for i in _manifest_chunks(bytes(data))],
        )
    # usage per member, recomputed from what is stored (the old table had team totals)
    conn.execute(
        "INSERT INTO usage (team, member, bytes) "
        "SELECT team, member, SUM(n) FROM ("
        " SELECT team, ? AS member, LENGTH(data) AS n FROM rosters"
        " UNION ALL SELECT team, ?, LENGTH(data) FROM keyrings"
        " UNION ALL SELECT team, ?, LENGTH(data) FROM requests"
        " UNION ALL SELECT team, writer, LENGTH(data) FROM manifests"
        " UNION ALL SELECT team, writer, size FROM chunks"
        ") GROUP BY team, member",
        (TEAM_OWNER, TEAM_OWNER, TEAM_OWNER),
    )
    for table in ("teams", "usage", "keyrings", "changes"):
        conn.execute(f"DROP TABLE old_{table}")


# -- PostgreSQL ----------------------------------------------------------------------

#: pg_advisory_xact_lock key of the upgrader ("sealmem" in ASCII, as a bigint)
SCHEMA_LOCK = 0x7365616C6D656D

_PG = {
    "int": "BIGINT",
    "blob": "BYTEA",
    "rowid": "",
    "keyring": "roster_version BIGINT NOT NULL, data BYTEA NOT NULL, stored_at BIGINT NOT NULL",
}
_PG_V1 = (
    _LAYOUT.format(**_PG)
    + _NONCES.format(**_PG)
    + """
CREATE TABLE slots (
    team TEXT NOT NULL, project TEXT NOT NULL, writer TEXT NOT NULL, seq BIGINT NOT NULL,
    PRIMARY KEY (team, project, writer));
CREATE TABLE rate_buckets (
    key TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, at_ms BIGINT NOT NULL);
"""
)

#: PG_MIGRATIONS[i] takes the database from version i to version i + 1.
PG_MIGRATIONS: tuple[str, ...] = (_PG_V1, _CHECKPOINTS.format(**_PG))


def upgrade_pg(conn: Any) -> int:
    """Bring the database behind ``conn`` (a psycopg connection in autocommit) to the
    newest version; return it."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        current = 0 if row is None else int(row[0])
        if current > len(PG_MIGRATIONS):
            raise StorageError(
                f"the hub database is at schema version {current}, newer than this hub "
                f"understands ({len(PG_MIGRATIONS)}); upgrade sealmem on every replica"
            )
        for script in PG_MIGRATIONS[current:]:
            conn.execute(script)
        if row is None:
            conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (len(PG_MIGRATIONS),))
        elif current < len(PG_MIGRATIONS):
            conn.execute("UPDATE schema_version SET version = %s", (len(PG_MIGRATIONS),))
    return len(PG_MIGRATIONS)
