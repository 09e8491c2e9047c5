"""The hub's PostgreSQL schema and its forward-only upgrader.

``schema_version`` holds one row, the version the database is at.  Each entry
of :data:`MIGRATIONS` brings it one version further.  :func:`upgrade` applies
the missing ones in one transaction under a transaction-scoped advisory lock,
so replicas that start at the same moment upgrade once and the others wait
and then find the work done.  A database written by a newer hub (a version
above the last one known here) is refused rather than guessed at.

Every team's metadata hangs off its ``teams`` row: ``cursor`` is the team's
change-feed position (allocated under that row's lock, so feed order is commit
order within a team and says nothing about other teams), ``generation`` counts
its roster and keyring writes (a replica's cached trusted state is stale when
it differs).  ``usage`` is per (team, member); ``slots`` holds each writer's
newest seq, the compare-and-swap target of a manifest write;
``manifest_chunks`` which chunks the kept manifests name.  ``nonces`` and
``rate_buckets`` are shared by every replica.
"""

from __future__ import annotations

from typing import Any

from . import StorageError

__all__ = ["MIGRATIONS", "NOTIFY_CHANNEL", "SCHEMA_LOCK", "upgrade"]

#: pg_advisory_xact_lock key of the upgrader ("sealmem" in ASCII, as a bigint)
SCHEMA_LOCK = 0x7365616C6D656D
#: LISTEN/NOTIFY channel; the payload is the team id whose feed moved
NOTIFY_CHANNEL = "sealmem_changes"

_V1 = """
CREATE TABLE teams (
    team TEXT PRIMARY KEY,
    registered_at BIGINT NOT NULL,
    cursor BIGINT NOT NULL DEFAULT 0,
    generation BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE usage (
    team TEXT NOT NULL,
    member TEXT NOT NULL,
    bytes BIGINT NOT NULL,
    PRIMARY KEY (team, member)
);
CREATE TABLE rosters (
    team TEXT NOT NULL,
    version BIGINT NOT NULL,
    data BYTEA NOT NULL,
    stored_at BIGINT NOT NULL,
    PRIMARY KEY (team, version)
);
CREATE TABLE members (
    team TEXT NOT NULL,
    kid TEXT NOT NULL,
    sign_public BYTEA NOT NULL,
    PRIMARY KEY (team, kid)
);
CREATE INDEX members_kid ON members (kid);
CREATE TABLE keyrings (
    team TEXT NOT NULL,
    project TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    roster_version BIGINT NOT NULL,
    data BYTEA NOT NULL,
    stored_at BIGINT NOT NULL,
    PRIMARY KEY (team, project, epoch)
);
CREATE TABLE slots (
    team TEXT NOT NULL,
    project TEXT NOT NULL,
    writer TEXT NOT NULL,
    seq BIGINT NOT NULL,
    PRIMARY KEY (team, project, writer)
);
CREATE TABLE manifests (
    team TEXT NOT NULL,
    project TEXT NOT NULL,
    writer TEXT NOT NULL,
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL,
    reset_at BIGINT NOT NULL,
    data BYTEA NOT NULL,
    stored_at BIGINT NOT NULL,
    PRIMARY KEY (team, project, writer, seq)
);
CREATE TABLE manifest_chunks (
    team TEXT NOT NULL,
    project TEXT NOT NULL,
    writer TEXT NOT NULL,
    id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    PRIMARY KEY (team, project, writer, id, seq)
);
CREATE TABLE chunks (
    team TEXT NOT NULL,
    project TEXT NOT NULL,
    writer TEXT NOT NULL,
    id TEXT NOT NULL,
    size BIGINT NOT NULL,
    stored_at BIGINT NOT NULL,
    PRIMARY KEY (team, project, writer, id)
);
CREATE INDEX chunks_stored ON chunks (stored_at);
CREATE TABLE requests (
    team TEXT NOT NULL,
    kid TEXT NOT NULL,
    data BYTEA NOT NULL,
    stored_at BIGINT NOT NULL,
    address TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (team, kid)
);
CREATE TABLE changes (
    team TEXT NOT NULL,
    cursor BIGINT NOT NULL,
    kind TEXT NOT NULL,
    project TEXT,
    writer TEXT,
    seq BIGINT,
    at BIGINT NOT NULL,
    PRIMARY KEY (team, cursor)
);
CREATE TABLE nonces (
    kid TEXT NOT NULL,
    nonce TEXT NOT NULL,
    expires_ms BIGINT NOT NULL,
    PRIMARY KEY (kid, nonce)
);
CREATE INDEX nonces_expiry ON nonces (expires_ms);
CREATE TABLE rate_buckets (
    key TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    at_ms BIGINT NOT NULL
);
"""

#: MIGRATIONS[i] takes the database from version i to version i + 1.
MIGRATIONS: tuple[str, ...] = (_V1,)


def upgrade(conn: Any) -> int:
    """Bring the database behind ``conn`` (a psycopg connection in autocommit) to the
    newest version; return it."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        current = 0 if row is None else int(row[0])
        if current > len(MIGRATIONS):
            raise StorageError(
                f"the hub database is at schema version {current}, newer than this hub "
                f"understands ({len(MIGRATIONS)}); upgrade sealmem on every replica"
            )
        for script in MIGRATIONS[current:]:
            conn.execute(script)
        if row is None:
            conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (len(MIGRATIONS),))
        elif current < len(MIGRATIONS):
            conn.execute("UPDATE schema_version SET version = %s", (len(MIGRATIONS),))
    return len(MIGRATIONS)
