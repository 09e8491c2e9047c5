"""The local store's schema, as an ordered list of forward-only migrations.

Rules: a migration, once released, is never edited or reordered; a change is a
new migration appended at the end with the next version number.  The runner
(:mod:`sealmem.client.store.connection`) applies every missing one in its own
transaction and records it in ``schema_migrations``.  Version 1 is the baseline of
the first release; a store of the builds before it is refused with the way out
(:mod:`sealmem.client.store.prebaseline`).

Tables (version 1):

``memories``
    one row per memory id: the current winning version, plus local state
    (``local_importance`` after importance floors, ``seen_count``, ``updated_at``,
    ``norm_hash`` for de-duplication) and the provenance of the version
    (``transport``, ``signer``, ``signer_name``, ``verified``, ``received_at``,
    ``snapshot_seq``).  ``keywords`` is space-joined text for full-text search;
    ``keywords_json`` and ``supersedes_json`` keep the exact lists of the record.
    ``bucket_key`` holds the low 16 bits of the id's snapshot bucket hash
    (:func:`sealmem.protocol.snapshot.bucket_key`; NULL: the next push fills it);
    ``stems`` the row's distinct Porter stems, sorted, space-joined
    (:func:`sealmem.client.store.terms.stored_stems`), which recall reads.
``supersedes``
    ``(old_id, new_id)`` links of live (non-deleted) winners, indexed both ways.
``history``
    every replaced version: the record's wire JSON, its local state and
    provenance, and when it was replaced.
``meta``
    key/value pairs: ``store_id``, ``hlc`` (``wall:counter`` of the last local
    write), ``redaction_rules`` (the rules version the ``redaction_marks`` hold for).
``redaction_marks``
    per memory id, the version whose text this store's rules wrote into ``memories``
    (or found clean there): :mod:`sealmem.client.store.redacting`.
team sync
    ``team_objects`` (trusted roster and keyring envelopes), ``chain_heads`` and
    ``witnessed`` per (writer, project), ``own_chain`` (this member's last manifest
    per project; ``pushed_wall`` packed by :func:`sealmem.protocol.hlc.pack`),
    ``push_editor`` (the member this store pushes as), ``sync_refusals``, ``sync_runs``.

source (version 2)
    ``memories.source``: who wrote the version's text, as its record states it (``_SOURCE``).

trust (version 3)
    ``member_trust``: the reader's own setting per member id (``trusted``, ``review``,
    ``muted``; a member without a row has the default of
    :func:`sealmem.client.recall.trust.default_state`); ``verdicts``: a person's
    ``accepted`` or ``dismissed`` on one version (id, hlc, editor) of a teammate's
    memory awaiting review, or of a proposal (:mod:`sealmem.client.recall.standing`).

own sends (version 5)
    ``own_sends``: each (seq, hash) of our own chain recorded before it is sent.

grams (version 7)
    ``memories.grams``: the extra index tokens of a row's text, space-joined (NULL: none,
    as for all ASCII text): the bigrams of its runs of scripts written without spaces
    and a token per emoji or symbol (:func:`sealmem.client.store.terms.stored_grams`,
    :mod:`sealmem.client.store.scripts`); ``memories_fts`` and ``history_fts`` index
    them in their third column, and ``stems`` holds their terms too.

grams again (version 11)
    the same columns, refilled for what ``grams`` holds since: the bigrams of Hangul
    runs and the last character of every run (a one-character query finds any memory
    holding it).  Data only: a hook reads and writes a store without it (the older rows
    keep their grams of before until it runs).

grams composed (version 12)
    the same refill for grams taken of a text's composed letters (NFC): a row stored
    decomposed (Korean as its jamo, kana with a separate voiced mark) or holding a CJK
    compatibility ideograph had grams no query asks for since.  Data only, as 11.

freshness (version 8)
    ``freshness``: per memory id, when this reader last recalled it and last kept it in
    review (:mod:`sealmem.client.store.freshness`); local, never synced.  The review
    period is ``meta`` key ``stale_after_days``.

embeddings (version 9)
    ``embeddings``: per ``memories`` rowid, the vector of its text that the semantic
    extra derived (:mod:`sealmem.client.recall.semantic`), and the model that made it.
    Local only, never synced; not kept by the one writer, which only drops the vectors
    of rows it re-words or deletes (:mod:`.derived`); the extra fills the rest outside it.

Derived tables, each kept by one function of :mod:`sealmem.client.store.derived`
(called by the one writer, :mod:`sealmem.client.store.writer`, once per batch; no
trigger) and rebuilt from ``memories`` and ``history`` by its ``rebuild``:

``memories_fts``, ``history_fts``
    FTS5 indexes of the text of ``memories`` (external content) and ``history``.
``store_counts``
    how many ``memories`` rows there are (the journal reads it at each commit).
``own_counts``
    per (project, editor), how many team rows there are and how many are live.
``push_dirty``
    the ids of the team rows of the member this store pushes as (every team row while
    ``push_editor`` is empty) whose published fields were written, cleared by the push
    that carried them (``*`` stands for every bucket).
``term_counts``, ``term_counts_at``
    the document count of every term held by at least 1,000 memories when last
    counted from the index, and how many memories the store held then and how many
    rows the counts have counted since (recall reads the counts while that equals
    ``store_counts.memories``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from .gramrows import fill_history, fill_memories
from .terms import TOKENIZE

__all__ = ["MIGRATIONS", "Migration", "latest_version"]


@dataclass(frozen=True)
class Migration:
    """One schema step: ``sql`` runs inside a transaction (no BEGIN/COMMIT in it), then
    ``fill`` (when given) in the same transaction: what SQL alone cannot compute.

    ``data_only``: the step changes no table (no ``sql``), it only refills rows this
    code writes as they are now; this code reads and writes a store lacking it, only
    what it refills is older until it runs.  A process that must not start a migration
    it cannot finish (a hook) opens such a store without migrating it
    (:func:`sealmem.client.store.migrations.unmigrated`)."""

    version: int
    name: str
    sql: str
    fill: Callable[[sqlite3.Connection], None] | None = None
    data_only: bool = False


_MEMORIES = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE memories (
    rowid            INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,
    project          TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    content          TEXT    NOT NULL,
    keywords         TEXT    NOT NULL DEFAULT '',
    keywords_json    TEXT    NOT NULL DEFAULT '[]',
    importance       REAL    NOT NULL,
    local_importance REAL    NOT NULL,
    author           TEXT    NOT NULL,
    editor           TEXT    NOT NULL,
    created_at       INTEGER NOT NULL,
    hlc_wall         INTEGER NOT NULL,
    hlc_counter      INTEGER NOT NULL,
    supersedes_json  TEXT    NOT NULL DEFAULT '[]',
    deleted          INTEGER NOT NULL DEFAULT 0,
    delete_reason    TEXT,
    origin           TEXT    NOT NULL,
    visibility       TEXT    NOT NULL CHECK (visibility IN ('team', 'private')),
    seen_count       INTEGER NOT NULL DEFAULT 1,
    updated_at       INTEGER NOT NULL,
    norm_hash        TEXT,
    transport        TEXT    NOT NULL DEFAULT 'local',
    signer           TEXT,
    signer_name      TEXT,
    verified         INTEGER NOT NULL DEFAULT 0,
    received_at      INTEGER,
    snapshot_seq     INTEGER,
    bucket_key       INTEGER,
    stems            TEXT
);
CREATE INDEX memories_project_updated ON memories (project, updated_at);
CREATE INDEX memories_updated ON memories (updated_at);
CREATE INDEX memories_dedup ON memories (project, norm_hash) WHERE deleted = 0;
CREATE INDEX memories_kind ON memories (kind);
CREATE INDEX memories_origin_created ON memories (origin, created_at);
CREATE INDEX memories_own
ON memories (project, editor, visibility, hlc_wall, hlc_counter, deleted);
CREATE INDEX memories_own_bucket ON memories (project, editor, bucket_key)
WHERE visibility = 'team';
CREATE INDEX memories_no_bucket ON memories (project) WHERE bucket_key IS NULL;
CREATE INDEX memories_own_tombs ON memories (project, editor, hlc_wall)
WHERE visibility = 'team' AND deleted = 1;

CREATE TABLE supersedes (
    old_id TEXT NOT NULL,
    new_id TEXT NOT NULL,
    PRIMARY KEY (old_id, new_id)
) WITHOUT ROWID;
CREATE INDEX supersedes_new ON supersedes (new_id, old_id);

CREATE TABLE history (
    seq              INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL,
    record_json      TEXT    NOT NULL,
    local_importance REAL    NOT NULL,
    seen_count       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    transport        TEXT    NOT NULL,
    signer           TEXT,
    signer_name      TEXT,
    verified         INTEGER NOT NULL DEFAULT 0,
    received_at      INTEGER,
    snapshot_seq     INTEGER,
    replaced_at      INTEGER NOT NULL
);
CREATE INDEX history_id ON history (id, seq);

CREATE TABLE redaction_marks (
    id          TEXT    PRIMARY KEY,
    hlc_wall    INTEGER NOT NULL,
    hlc_counter INTEGER NOT NULL,
    editor      TEXT    NOT NULL
) WITHOUT ROWID;
"""

_TEAM = """
CREATE TABLE team_objects (
    kind        TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    data        BLOB    NOT NULL,
    accepted_at INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
) WITHOUT ROWID;

CREATE TABLE chain_heads (
    writer      TEXT    NOT NULL,
    project     TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    hash        TEXT    NOT NULL,
    reset_at    INTEGER NOT NULL DEFAULT 0,
    epoch       INTEGER NOT NULL DEFAULT 0,
    buckets     INTEGER NOT NULL DEFAULT 0,
    chunks_json TEXT    NOT NULL DEFAULT '{}',
    records     INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL DEFAULT 0,
    accepted_at INTEGER NOT NULL,
    PRIMARY KEY (writer, project)
) WITHOUT ROWID;

CREATE TABLE witnessed (
    writer  TEXT    NOT NULL,
    project TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    hash    TEXT    NOT NULL,
    by      TEXT    NOT NULL,
    PRIMARY KEY (writer, project)
) WITHOUT ROWID;

CREATE TABLE own_chain (
    project      TEXT    PRIMARY KEY,
    seq          INTEGER NOT NULL,
    hash         TEXT    NOT NULL,
    manifest     BLOB    NOT NULL,
    digests_json TEXT    NOT NULL,
    pushed_wall  INTEGER NOT NULL,
    pushed_count INTEGER NOT NULL,
    reset_at     INTEGER NOT NULL DEFAULT 0,
    pushed_at    INTEGER NOT NULL
);

CREATE TABLE push_editor (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    editor TEXT    NOT NULL
);

CREATE TABLE sync_refusals (
    seq    INTEGER PRIMARY KEY,
    at     INTEGER NOT NULL,
    reason TEXT    NOT NULL,
    object TEXT    NOT NULL,
    detail TEXT    NOT NULL
);
CREATE INDEX sync_refusals_at ON sync_refusals (at);

CREATE TABLE sync_runs (
    seq          INTEGER PRIMARY KEY,
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER NOT NULL,
    summary_json TEXT    NOT NULL
);
"""

_DERIVED = """
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content,
    keywords,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE VIRTUAL TABLE history_fts USING fts5 (
    content,
    keywords,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TABLE store_counts (
    one      INTEGER PRIMARY KEY CHECK (one = 1),
    memories INTEGER NOT NULL
);
INSERT INTO store_counts (one, memories) VALUES (1, 0);

CREATE TABLE own_counts (
    project TEXT    NOT NULL,
    editor  TEXT    NOT NULL,
    rows    INTEGER NOT NULL,
    live    INTEGER NOT NULL,
    PRIMARY KEY (project, editor)
) WITHOUT ROWID;

CREATE TABLE push_dirty (
    seq     INTEGER PRIMARY KEY,
    project TEXT    NOT NULL,
    id      TEXT    NOT NULL
);
CREATE INDEX push_dirty_project ON push_dirty (project, seq);

CREATE TABLE term_counts (
    term TEXT    PRIMARY KEY,
    docs INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE term_counts_at (
    one      INTEGER PRIMARY KEY CHECK (one = 1),
    memories INTEGER NOT NULL,
    counted  INTEGER NOT NULL
);
INSERT INTO term_counts_at (one, memories, counted) VALUES (1, 0, 0);
"""

_SOURCE = """
ALTER TABLE memories ADD COLUMN source TEXT;
CREATE INDEX memories_private ON memories (created_at, id)
WHERE visibility = 'private' AND deleted = 0;
"""
"""``memories.source``: who wrote the version's text, as its record states it (NULL: the
record states none, :func:`sealmem.protocol.record.legacy_source` reads its origin); the
index serves the review queue of private memories (:mod:`sealmem.client.hosts.review`)."""

BASELINE = "baseline: memories, history, team sync, derived tables"
"""The name of migration 1 (a store whose migration 1 has another name is pre-baseline)."""

_TRUST = """
CREATE TABLE member_trust (
    member TEXT    PRIMARY KEY,
    state  TEXT    NOT NULL CHECK (state IN ('trusted', 'review', 'muted')),
    set_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE verdicts (
    id          TEXT    NOT NULL,
    hlc_wall    INTEGER NOT NULL,
    hlc_counter INTEGER NOT NULL,
    editor      TEXT    NOT NULL,
    verdict     TEXT    NOT NULL CHECK (verdict IN ('accepted', 'dismissed')),
    decided_at  INTEGER NOT NULL,
    PRIMARY KEY (id, hlc_wall, hlc_counter, editor)
) WITHOUT ROWID;
"""

_VERDICT_DIGEST = """
ALTER TABLE verdicts ADD COLUMN digest TEXT NOT NULL DEFAULT '';
"""
"""A verdict names its version's bytes too (:func:`.trust_rows.version_key`): another
version with the same id, clock and editor is not the one a person judged.  A verdict
of before it (``''``) names none: the version waits again."""

_HELD_FORGETS = """
CREATE TABLE held_forgets (
    id       TEXT    PRIMARY KEY,
    reason   TEXT    NOT NULL,
    origin   TEXT    NOT NULL,
    asked_at INTEGER NOT NULL,
    digest   TEXT    NOT NULL DEFAULT ''
) WITHOUT ROWID;
"""
"""An agent's ``forget`` of a shared memory, waiting for a person
(:mod:`.agentwrites`): nothing is erased or published until one accepts it, and an
accept forgets only the version the agent saw (``digest``)."""

_OWN_SENDS = """
CREATE TABLE own_sends (
    project TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    hash    TEXT    NOT NULL,
    sent_at INTEGER NOT NULL,
    PRIMARY KEY (project, seq, hash)
) WITHOUT ROWID;
"""
"""Each manifest of our own chain recorded before it is sent (SPEC "Restore and copied
keys"): a push interrupted after its manifest landed is thereby told from another
machine writing with this key.  Rows at or below the recorded head are dropped."""

_GRAMS = f"""
ALTER TABLE memories ADD COLUMN grams TEXT;
DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content,
    keywords,
    grams,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = '{TOKENIZE}'
);
ALTER TABLE history_fts RENAME TO history_fts_before_grams;
CREATE VIRTUAL TABLE history_fts USING fts5 (
    content,
    keywords,
    grams,
    tokenize = '{TOKENIZE}'
);
INSERT INTO history_fts (rowid, content, keywords)
SELECT rowid, content, keywords FROM history_fts_before_grams;
DROP TABLE history_fts_before_grams;
"""


def _fill_grams(conn: sqlite3.Connection) -> None:
    """The grams of every row with any, then the index built anew over the three
    columns; the history index's rows (copied over) get their grams too."""
    fill_memories(conn)
    conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
    fill_history(conn)


def _refill_grams(conn: sqlite3.Connection) -> None:
    """Grams as they are now (Hangul runs, the last character of each run): the rows
    whose grams change, and the index again if any did; ASCII rows are not touched."""
    if fill_memories(conn):
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
    fill_history(conn)


_EMBEDDINGS = """
CREATE TABLE embeddings (
    rowid  INTEGER PRIMARY KEY,
    model  TEXT    NOT NULL,
    vector BLOB    NOT NULL
);
"""
"""A vector per live memory row (``rowid`` is ``memories.rowid``), int8
(:func:`sealmem.client.recall.semantic.pack`); a row re-worded or
deleted loses its vector in the same batch, so one never outlives its text."""

_FRESHNESS = """
CREATE TABLE freshness (
    id          TEXT    PRIMARY KEY,
    recalled_at INTEGER,
    kept_at     INTEGER
) WITHOUT ROWID;
"""
"""When this reader last recalled a memory and last kept it in ``sealmem review``: what
makes a memory no one confirms stale (:mod:`.freshness`); never synced."""

_TRUST_DEVICE = """
ALTER TABLE member_trust ADD COLUMN device TEXT NOT NULL DEFAULT '';
ALTER TABLE member_trust ADD COLUMN counter INTEGER NOT NULL DEFAULT 0;
"""
"""A trust state a sibling device set (its kid; '' for this device) at HLC (set_at,
counter): merged per teammate, last writer wins (SPEC "Private memories and trust
follow the member")."""

MIGRATIONS: list[Migration] = [
    Migration(1, BASELINE, _MEMORIES + _TEAM + _DERIVED),
    Migration(2, "source: who wrote a memory's text", _SOURCE),
    Migration(3, "trust: the reader's trust in each member, and its verdicts on versions", _TRUST),
    Migration(4, "verdict digest: a verdict names the bytes it judged", _VERDICT_DIGEST),
    Migration(
        5, "held forgets: an agent's forget of a shared memory waits for a person", _HELD_FORGETS
    ),
    Migration(6, "own sends: our manifests recorded before they are sent", _OWN_SENDS),
    Migration(
        7, "grams: words inside runs of scripts without spaces, and emoji", _GRAMS, _fill_grams
    ),
    Migration(8, "freshness: when a memory was last recalled or kept in review", _FRESHNESS),
    Migration(9, "embeddings: local vectors of the semantic extra, never synced", _EMBEDDINGS),
    Migration(10, "trust device: which device of the member set a trust state", _TRUST_DEVICE),
    Migration(11, "grams of Hangul runs and of one character", "", _refill_grams, data_only=True),
    Migration(12, "grams of the composed letters (NFC)", "", _refill_grams, data_only=True),
]


def latest_version() -> int:
    """The schema version this code writes: the last migration's number."""
    return MIGRATIONS[-1].version
