"""The local store's schema, as an ordered list of forward-only migrations.

Rules: a migration, once released, is never edited or reordered; a change is a
new migration appended at the end with the next version number.  The runner
(:mod:`sealmem.client.store.connection`) applies every missing one in its own transaction
and records it in ``schema_migrations``.

Tables (version 1):

``memories``
    one row per memory id: the current winning version, plus local state
    (``local_importance`` after importance floors, ``seen_count``,
    ``updated_at``, ``norm_hash`` for de-duplication) and the provenance of the
    version (``transport``, ``signer``, ``signer_name``, ``verified``,
    ``received_at``, ``snapshot_seq``).  ``keywords`` is space-joined text for
    full-text search; ``keywords_json`` and ``supersedes_json`` keep the exact
    lists of the record.
``supersedes``
    ``(old_id, new_id)`` links of live (non-deleted) winners, indexed both ways.
``history``
    every replaced version: the record's wire JSON, its local state and
    provenance, and when it was replaced.
``memories_fts``
    FTS5 external-content index over ``memories(content, keywords)`` with the
    porter tokenizer, kept in sync by triggers.
``meta``
    key/value pairs: ``store_id``, ``hlc`` (``wall:counter`` of the last local
    write).

Version 3 adds the team sync tables; ``own_chain.pushed_wall`` holds the newest
HLC this member published in the project, packed by
:func:`sealmem.protocol.hlc.pack` (since version 4; before, ``(wall << 20) +
counter``).

Version 5 purges what earlier versions kept of forgotten memories: the versions
with content in ``history`` that the winning tombstone of their id covers (all of
them for a tombstone written here, the tombstone writer's own for a pulled one;
since then :mod:`sealmem.client.store.rows` never keeps them), and the deleted
tokens in both full-text indexes.

Version 6 lets a batch writer fill ``memories_fts`` and ``history_fts`` itself, once
per batch: while ``fts_batch`` holds a row (only ever inside the writer's
transaction), their insert and update triggers stand aside
(:func:`sealmem.client.store.batch.write_versions`).  Single writes still go
through the triggers.

Version 7 makes a push cost what changed (:mod:`sealmem.client.sync.outgoing`):
``memories.bucket_key`` holds the low 16 bits of a memory's snapshot bucket hash
(:func:`sealmem.protocol.snapshot.bucket_key`; the bucket is ``bucket_key %
buckets``), filled by the migration and, for rows written since (NULL), by the
next push; ``push_dirty`` logs the ids of team rows whose published fields were
written (triggers, so every write path logs), cleared by the push that carried
them (an id ``*``, logged by the migration for every chain pushed before, stands
for every bucket); indexes serve the writer's own summary, its live team counts and
its rows by bucket.

Version 8 serves the writer's own summary and live team counts from counters
instead of a scan of its rows (:func:`sealmem.client.sync.replica.own_summary`):
``own_counts`` holds, per (project, editor), how many team rows there are and how
many of them are live (not tombstones), kept by triggers on every insert, delete
and update that moves a row in or out of a pair (with ``recursive_triggers`` on,
so that ``INSERT OR REPLACE`` counts the row it replaces).  The newest HLC is one
index seek (``memories_own``), the tombstones due for collection a range of
``memories_own_tombs`` (tombstones only); ``memories_own_live`` is dropped.

Version 9 lets a pull or an import skip the redaction rules for text this store
already redacted (:func:`sealmem.client.store.redacting.redact_versions`):
``redaction_marks`` holds, per memory id, the version (``hlc_wall``,
``hlc_counter``, ``editor``) whose text this store's rules wrote into ``memories``
(or found clean there); ``meta`` key ``redaction_rules`` names the rules version
(:data:`sealmem.client.store.redaction.RULES_VERSION`) the marks hold for, and a
change of rules clears them.  A mark holds no text and no digest of text.

Version 10 makes a pull, an import and a push pay per batch, not per row, for what the
triggers of versions 7 and 8 did per inserted row, and keeps pulled teammates' rows
out of the dirty log:

- ``push_editor`` names the member whose snapshot this store publishes
  (:func:`sealmem.client.sync.replica.claim_pushes`, at every sync); ``push_dirty``
  then logs only rows that member wrote, before or after the write (a pulled version
  that replaces one of ours is logged: our bucket loses it; a teammate's row that
  was never ours is not).  While it is empty every team row is logged, as before; a
  change of member logs ``*`` for every chain (the log no longer says what the new
  member's rows did);
- ``store_counts`` holds how many ``memories`` rows there are (triggers), so that the
  journal (:func:`sealmem.client.store.journal.measure`) reads a number at each
  commit instead of counting the rows;
- while ``fts_batch`` holds a row, the insert triggers of ``own_counts``,
  ``push_dirty`` and ``store_counts`` stand aside too: the batch writer
  (:func:`sealmem.client.store.batch.write_versions`) adds its inserted rows to them
  once per batch.

Version 11 keeps each memory's stems for recall (:mod:`sealmem.client.recall.search`
scores a candidate by the query terms it holds, and stemming every candidate's text
was most of a cold recall's Python time): ``memories.stems`` is
:func:`sealmem.client.recall.terms.stored_stems` of the row's ``content`` and
``keywords`` (its distinct Porter stems, sorted, space-joined), written with the row
(:func:`sealmem.client.store.rows.memory_values`) and filled by the migration for the
rows before it (the connection's ``sealmem_stems`` function).  NULL means not known:
recall then stems the text itself, as before; a trigger sets it to NULL when a
write changes the text without writing its stems.  A change of the tokenizer or
the stemmer must come with a migration that refills the column.

Version 12 keeps the document count of every frequent term for recall
(:mod:`sealmem.client.recall.frequent`: FTS5 keeps none, and walking a common word's
postings cost a cold recall milliseconds): ``term_counts`` holds, per term held by
at least 1,000 memories when it was last filled from the index, how many memories
hold it; ``term_counts_at`` how many memories the store held then (the write paths
fill it again when the store has doubled) and how many rows the counts have counted
since.  Triggers keep the counts exact: a single write adds or takes one per stem
of ``memories.stems`` it inserts, deletes or re-words (the insert trigger stands
aside while ``fts_batch`` holds a row: the batch writer counts its inserted rows
once per batch); a write whose stems are not known empties the table, and recall
counts in the index until the next fill.  Recall reads the counts only while the
rows counted equal ``store_counts.memories``: a write path that inserted rows
without counting them makes it walk the index, never read a wrong count.

Version 13 makes the stems of non-ASCII text the index's own terms: such text is now
tokenized by SQLite itself (:mod:`sealmem.client.recall.terms`; Python's split and
fold differed from unicode61's there), so the migration fills ``stems`` again for the
rows whose content or keywords hold a non-ASCII character and counts the frequent
terms again from the index.  Its counting triggers also take a ``stems`` value that is
not a clean word list (a quote, a backslash or a control character: never written by
the tokenizer) as not known: a single write forgets the counts instead of failing (the
batch writer counts the stems it computed itself, in Python).  The check runs inside
the triggers' bodies, so a batch's rows pay nothing more than under version 12.

Version 14 follows a fix of the Python stemmer (:mod:`sealmem.client.recall.stemmer`),
which now stems every ASCII word as FTS5's ``porter`` does: it differed on a few
made-up words only (``eed``, ``ies``, ``sses``, and words whose stem ends in ``yy``
before ``ed`` or ``ing``).  The migration fills ``stems`` again for the rows whose
content or keywords hold one of those letter sequences, and counts the frequent terms
again from the index (the counting triggers had counted the old stems).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MIGRATIONS", "Migration", "latest_version"]


@dataclass(frozen=True)
class Migration:
    """One schema step: ``sql`` runs inside a transaction (no BEGIN/COMMIT in it)."""

    version: int
    name: str
    sql: str


_V1 = """
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
    snapshot_seq     INTEGER
);
CREATE INDEX memories_project_updated ON memories (project, updated_at);
CREATE INDEX memories_updated ON memories (updated_at);
CREATE INDEX memories_dedup ON memories (project, norm_hash) WHERE deleted = 0;
CREATE INDEX memories_kind ON memories (kind);

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

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content,
    keywords,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, content, keywords)
    VALUES (new.rowid, new.content, new.keywords);
END;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, keywords)
    VALUES ('delete', old.rowid, old.content, old.keywords);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, keywords ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, keywords)
    VALUES ('delete', old.rowid, old.content, old.keywords);
    INSERT INTO memories_fts (rowid, content, keywords)
    VALUES (new.rowid, new.content, new.keywords);
END;
"""

_V2 = """
CREATE INDEX memories_origin_created ON memories (origin, created_at);

CREATE VIRTUAL TABLE history_fts USING fts5 (
    content,
    keywords,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER history_fts_insert AFTER INSERT ON history BEGIN
    INSERT INTO history_fts (rowid, content, keywords)
    VALUES (
        new.seq,
        coalesce(json_extract(new.record_json, '$.content'), ''),
        coalesce((SELECT group_concat(value, ' ')
                  FROM json_each(new.record_json, '$.keywords')), '')
    );
END;

CREATE TRIGGER history_fts_delete AFTER DELETE ON history BEGIN
    DELETE FROM history_fts WHERE rowid = old.seq;
END;

INSERT INTO history_fts (rowid, content, keywords)
SELECT seq,
       coalesce(json_extract(record_json, '$.content'), ''),
       coalesce((SELECT group_concat(value, ' ') FROM json_each(record_json, '$.keywords')), '')
FROM history;
"""

_V3 = """
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

_V4 = """
UPDATE own_chain
SET pushed_wall = ((pushed_wall >> 20) << 16) | MIN(pushed_wall & 1048575, 65535);
"""

_V5 = """
DELETE FROM history
WHERE coalesce(json_extract(record_json, '$.deleted'), 0) = 0
  AND EXISTS (
    SELECT 1 FROM memories m
    WHERE m.id = history.id AND m.deleted = 1
      AND (m.transport = 'local' OR m.editor = json_extract(history.record_json, '$.editor'))
  );

INSERT INTO memories_fts (memories_fts) VALUES ('optimize');

INSERT INTO history_fts (history_fts) VALUES ('optimize');
"""

_V6 = """
CREATE TABLE IF NOT EXISTS fts_batch (
    one INTEGER PRIMARY KEY CHECK (one = 1)
);

DROP TRIGGER IF EXISTS memories_fts_insert;

DROP TRIGGER IF EXISTS memories_fts_update;

CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
WHEN NOT EXISTS (SELECT 1 FROM fts_batch) BEGIN
    INSERT INTO memories_fts (rowid, content, keywords)
    VALUES (new.rowid, new.content, new.keywords);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, keywords ON memories
WHEN NOT EXISTS (SELECT 1 FROM fts_batch) BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, content, keywords)
    VALUES ('delete', old.rowid, old.content, old.keywords);
    INSERT INTO memories_fts (rowid, content, keywords)
    VALUES (new.rowid, new.content, new.keywords);
END;

DROP TRIGGER IF EXISTS history_fts_insert;

CREATE TRIGGER history_fts_insert AFTER INSERT ON history
WHEN NOT EXISTS (SELECT 1 FROM fts_batch) BEGIN
    INSERT INTO history_fts (rowid, content, keywords)
    VALUES (
        new.seq,
        coalesce(json_extract(new.record_json, '$.content'), ''),
        coalesce((SELECT group_concat(value, ' ')
                  FROM json_each(new.record_json, '$.keywords')), '')
    );
END;
"""

_V7 = """
ALTER TABLE memories ADD COLUMN bucket_key INTEGER;

UPDATE memories SET bucket_key = sealmem_bucket_key(id);

CREATE INDEX memories_own
ON memories (project, editor, visibility, hlc_wall, hlc_counter, deleted);

CREATE INDEX memories_own_live ON memories (editor, visibility, deleted, project);

CREATE INDEX memories_own_bucket ON memories (project, editor, bucket_key)
WHERE visibility = 'team';

CREATE INDEX memories_no_bucket ON memories (project) WHERE bucket_key IS NULL;

CREATE TABLE push_dirty (
    seq     INTEGER PRIMARY KEY,
    project TEXT    NOT NULL,
    id      TEXT    NOT NULL
);
CREATE INDEX push_dirty_project ON push_dirty (project, seq);

INSERT INTO push_dirty (project, id) SELECT project, '*' FROM own_chain;

CREATE TRIGGER memories_push_insert AFTER INSERT ON memories
WHEN new.visibility = 'team' BEGIN
    INSERT INTO push_dirty (project, id) VALUES (new.project, new.id);
END;

CREATE TRIGGER memories_push_delete AFTER DELETE ON memories
WHEN old.visibility = 'team' BEGIN
    INSERT INTO push_dirty (project, id) VALUES (old.project, old.id);
END;

CREATE TRIGGER memories_push_update AFTER UPDATE OF
    id, project, kind, content, keywords, keywords_json, importance, author, editor,
    created_at, hlc_wall, hlc_counter, supersedes_json, deleted, delete_reason, origin,
    visibility
ON memories WHEN old.visibility = 'team' OR new.visibility = 'team' BEGIN
    INSERT INTO push_dirty (project, id) VALUES (old.project, old.id);
    INSERT INTO push_dirty (project, id) SELECT new.project, new.id
    WHERE new.project IS NOT old.project OR new.id IS NOT old.id;
END;
"""

_V8 = """
DROP TABLE IF EXISTS own_counts;

CREATE TABLE own_counts (
    project TEXT    NOT NULL,
    editor  TEXT    NOT NULL,
    rows    INTEGER NOT NULL,
    live    INTEGER NOT NULL,
    PRIMARY KEY (project, editor)
) WITHOUT ROWID;

INSERT INTO own_counts (project, editor, rows, live)
SELECT project, editor, COUNT(*), SUM(deleted = 0) FROM memories
WHERE visibility = 'team' GROUP BY project, editor;

DROP INDEX IF EXISTS memories_own_live;

CREATE INDEX IF NOT EXISTS memories_own_tombs ON memories (project, editor, hlc_wall)
WHERE visibility = 'team' AND deleted = 1;

DROP TRIGGER IF EXISTS memories_count_insert;

DROP TRIGGER IF EXISTS memories_count_delete;

DROP TRIGGER IF EXISTS memories_count_update;

CREATE TRIGGER memories_count_insert AFTER INSERT ON memories
WHEN new.visibility = 'team' BEGIN
    INSERT INTO own_counts (project, editor, rows, live)
    VALUES (new.project, new.editor, 1, new.deleted = 0)
    ON CONFLICT (project, editor) DO UPDATE SET
        rows = rows + 1, live = live + excluded.live;
END;

CREATE TRIGGER memories_count_delete AFTER DELETE ON memories
WHEN old.visibility = 'team' BEGIN
    UPDATE own_counts SET rows = rows - 1, live = live - (old.deleted = 0)
    WHERE project = old.project AND editor = old.editor;
END;

CREATE TRIGGER memories_count_update AFTER UPDATE OF project, editor, visibility, deleted
ON memories WHEN (old.visibility = 'team' OR new.visibility = 'team') AND (
    new.project IS NOT old.project OR new.editor IS NOT old.editor
    OR new.visibility IS NOT old.visibility OR new.deleted IS NOT old.deleted
) BEGIN
    UPDATE own_counts SET rows = rows - 1, live = live - (old.deleted = 0)
    WHERE old.visibility = 'team' AND project = old.project AND editor = old.editor;
    INSERT INTO own_counts (project, editor, rows, live)
    SELECT new.project, new.editor, 1, new.deleted = 0 WHERE new.visibility = 'team'
    ON CONFLICT (project, editor) DO UPDATE SET
        rows = rows + 1, live = live + excluded.live;
END;
"""

_V9 = """
CREATE TABLE IF NOT EXISTS redaction_marks (
    id          TEXT    PRIMARY KEY,
    hlc_wall    INTEGER NOT NULL,
    hlc_counter INTEGER NOT NULL,
    editor      TEXT    NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS memories_marks_delete AFTER DELETE ON memories BEGIN
    DELETE FROM redaction_marks WHERE id = old.id;
END;
"""

_MINE_NEW = "coalesce((SELECT editor FROM push_editor) = new.editor, 1)"
_MINE_OLD = "coalesce((SELECT editor FROM push_editor) = old.editor, 1)"

_V10 = f"""
CREATE TABLE IF NOT EXISTS push_editor (
    one    INTEGER PRIMARY KEY CHECK (one = 1),
    editor TEXT    NOT NULL
);

CREATE TABLE IF NOT EXISTS store_counts (
    one      INTEGER PRIMARY KEY CHECK (one = 1),
    memories INTEGER NOT NULL
);

INSERT OR REPLACE INTO store_counts (one, memories) SELECT 1, COUNT(*) FROM memories;

DROP TRIGGER IF EXISTS memories_total_insert;

DROP TRIGGER IF EXISTS memories_total_delete;

CREATE TRIGGER memories_total_insert AFTER INSERT ON memories
WHEN NOT EXISTS (SELECT 1 FROM fts_batch) BEGIN
    UPDATE store_counts SET memories = memories + 1;
END;

CREATE TRIGGER memories_total_delete AFTER DELETE ON memories BEGIN
    UPDATE store_counts SET memories = memories - 1;
END;

DROP TRIGGER IF EXISTS memories_count_insert;

CREATE TRIGGER memories_count_insert AFTER INSERT ON memories
WHEN new.visibility = 'team' AND NOT EXISTS (SELECT 1 FROM fts_batch) BEGIN
    INSERT INTO own_counts (project, editor, rows, live)
    VALUES (new.project, new.editor, 1, new.deleted = 0)
    ON CONFLICT (project, editor) DO UPDATE SET
        rows = rows + 1, live = live + excluded.live;
END;

DROP TRIGGER IF EXISTS memories_push_insert;

DROP TRIGGER IF EXISTS memories_push_delete;

DROP TRIGGER IF EXISTS memories_push_update;

CREATE TRIGGER memories_push_insert AFTER INSERT ON memories
WHEN new.visibility = 'team' AND {_MINE_NEW} AND NOT EXISTS (SELECT 1 FROM fts_batch) BEGIN
    INSERT INTO push_dirty (project, id) VALUES (new.project, new.id);
END;

CREATE TRIGGER memories_push_delete AFTER DELETE ON memories
WHEN old.visibility = 'team' AND {_MINE_OLD} BEGIN
    INSERT INTO push_dirty (project, id) VALUES (old.project, old.id);
END;

CREATE TRIGGER memories_push_update AFTER UPDATE OF
    id, project, kind, content, keywords, keywords_json, importance, author, editor,
    created_at, hlc_wall, hlc_counter, supersedes_json, deleted, delete_reason, origin,
    visibility
ON memories WHEN (old.visibility = 'team' AND {_MINE_OLD})
    OR (new.visibility = 'team' AND {_MINE_NEW}) BEGIN
    INSERT INTO push_dirty (project, id) VALUES (old.project, old.id);
    INSERT INTO push_dirty (project, id) SELECT new.project, new.id
    WHERE new.project IS NOT old.project OR new.id IS NOT old.id;
END;
"""

_V11 = """
ALTER TABLE memories ADD COLUMN stems TEXT;

UPDATE memories SET stems = sealmem_stems(content, keywords);

CREATE TRIGGER memories_stems_stale AFTER UPDATE OF content, keywords ON memories
WHEN new.stems IS old.stems
    AND (new.content IS NOT old.content OR new.keywords IS NOT old.keywords) BEGIN
    UPDATE memories SET stems = NULL WHERE rowid = new.rowid;
END;
"""


def _stem_list(stems: str) -> str:
    """SQL for the terms of a ``memories.stems`` value (space-joined stems, which hold
    only letters and digits) as a JSON array, for ``json_each``."""
    return f"""'["' || replace({stems}, ' ', '","') || '"]'"""


_FORGET_COUNTS = """
    DELETE FROM term_counts;
    UPDATE term_counts_at SET memories = 0;
"""
_TEXT_CHANGED = "(new.content IS NOT old.content OR new.keywords IS NOT old.keywords)"

_V12 = f"""
CREATE TABLE IF NOT EXISTS term_counts (
    term TEXT    PRIMARY KEY,
    docs INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS term_counts_at (
    one      INTEGER PRIMARY KEY CHECK (one = 1),
    memories INTEGER NOT NULL,
    counted  INTEGER NOT NULL
);

CREATE VIRTUAL TABLE IF NOT EXISTS temp.sealmem_v12_vocab USING fts5vocab(main, memories_fts, row);

DELETE FROM term_counts;

INSERT INTO term_counts (term, docs) SELECT term, doc FROM temp.sealmem_v12_vocab WHERE doc >= 1000;

DROP TABLE temp.sealmem_v12_vocab;

INSERT OR REPLACE INTO term_counts_at (one, memories, counted)
SELECT 1, memories, memories FROM store_counts;

DROP TRIGGER IF EXISTS memories_terms_insert;

DROP TRIGGER IF EXISTS memories_terms_insert_unknown;

DROP TRIGGER IF EXISTS memories_terms_delete;

DROP TRIGGER IF EXISTS memories_terms_delete_unknown;

DROP TRIGGER IF EXISTS memories_terms_update;

DROP TRIGGER IF EXISTS memories_terms_update_unknown;

CREATE TRIGGER memories_terms_insert AFTER INSERT ON memories
WHEN new.stems IS NOT NULL AND NOT EXISTS (SELECT 1 FROM fts_batch) BEGIN
    UPDATE term_counts SET docs = docs + 1
    WHERE term IN (SELECT value FROM json_each({_stem_list("new.stems")}));
    UPDATE term_counts_at SET counted = counted + 1;
END;

CREATE TRIGGER memories_terms_insert_unknown AFTER INSERT ON memories
WHEN new.stems IS NULL BEGIN{_FORGET_COUNTS}END;

CREATE TRIGGER memories_terms_delete AFTER DELETE ON memories
WHEN old.stems IS NOT NULL BEGIN
    UPDATE term_counts SET docs = docs - 1
    WHERE term IN (SELECT value FROM json_each({_stem_list("old.stems")}));
    UPDATE term_counts_at SET counted = counted - 1;
END;

CREATE TRIGGER memories_terms_delete_unknown AFTER DELETE ON memories
WHEN old.stems IS NULL BEGIN{_FORGET_COUNTS}END;

CREATE TRIGGER memories_terms_update AFTER UPDATE OF content, keywords ON memories
WHEN {_TEXT_CHANGED} AND old.stems IS NOT NULL AND new.stems IS NOT NULL
    AND new.stems IS NOT old.stems BEGIN
    UPDATE term_counts SET docs = docs - 1
    WHERE term IN (SELECT value FROM json_each({_stem_list("old.stems")}));
    UPDATE term_counts SET docs = docs + 1
    WHERE term IN (SELECT value FROM json_each({_stem_list("new.stems")}));
END;

CREATE TRIGGER memories_terms_update_unknown AFTER UPDATE OF content, keywords ON memories
WHEN {_TEXT_CHANGED} AND (old.stems IS NULL OR new.stems IS NULL OR new.stems IS old.stems)
BEGIN{_FORGET_COUNTS}END;
"""


def _clean(stems: str) -> str:
    """SQL: whether a ``memories.stems`` value is a clean word list, one that
    :func:`_stem_list` turns into the JSON array of its words (no quote, backslash or
    control character: the tokenizer's terms hold none, a foreign value may)."""
    return (
        f"(instr({stems}, '\"') = 0 AND instr({stems}, '\\') = 0 "
        f"AND json_valid({_stem_list(stems)}))"
    )


def _terms(stems: str) -> str:
    """SQL: the terms of a ``memories.stems`` value for ``json_each``, none when it is
    not a clean word list (never an error)."""
    return f"CASE WHEN {_clean(stems)} THEN {_stem_list(stems)} ELSE '[]' END"


def _forget_unless_clean(*stems: str) -> str:
    """SQL statements: forget the counts when one of the ``stems`` values is not clean."""
    unclean = " OR ".join(f"NOT {_clean(value)}" for value in stems)
    return f"""
    DELETE FROM term_counts WHERE {unclean};
    UPDATE term_counts_at SET memories = 0 WHERE {unclean};
"""


_FORGET_REWORDED = _forget_unless_clean("old.stems", "new.stems")

_V13 = f"""
UPDATE memories SET stems = sealmem_stems(content, keywords)
WHERE length(CAST(content AS BLOB)) != length(content)
    OR length(CAST(keywords AS BLOB)) != length(keywords);

CREATE VIRTUAL TABLE IF NOT EXISTS temp.sealmem_v13_vocab USING fts5vocab(main, memories_fts, row);

DELETE FROM term_counts;

INSERT INTO term_counts (term, docs) SELECT term, doc FROM temp.sealmem_v13_vocab WHERE doc >= 1000;

DROP TABLE temp.sealmem_v13_vocab;

INSERT OR REPLACE INTO term_counts_at (one, memories, counted)
SELECT 1, memories, memories FROM store_counts;

DROP TRIGGER IF EXISTS memories_terms_insert;

DROP TRIGGER IF EXISTS memories_terms_insert_unknown;

DROP TRIGGER IF EXISTS memories_terms_delete;

DROP TRIGGER IF EXISTS memories_terms_delete_unknown;

DROP TRIGGER IF EXISTS memories_terms_update;

DROP TRIGGER IF EXISTS memories_terms_update_unknown;

CREATE TRIGGER memories_terms_insert AFTER INSERT ON memories
WHEN new.stems IS NOT NULL AND NOT EXISTS (SELECT 1 FROM fts_batch) BEGIN
    UPDATE term_counts SET docs = docs + 1
    WHERE term IN (SELECT value FROM json_each({_terms("new.stems")}));
    UPDATE term_counts_at SET counted = counted + 1;{_forget_unless_clean("new.stems")}END;

CREATE TRIGGER memories_terms_insert_unknown AFTER INSERT ON memories
WHEN new.stems IS NULL BEGIN{_FORGET_COUNTS}END;

CREATE TRIGGER memories_terms_delete AFTER DELETE ON memories
WHEN old.stems IS NOT NULL BEGIN
    UPDATE term_counts SET docs = docs - 1
    WHERE term IN (SELECT value FROM json_each({_terms("old.stems")}));
    UPDATE term_counts_at SET counted = counted - 1;{_forget_unless_clean("old.stems")}END;

CREATE TRIGGER memories_terms_delete_unknown AFTER DELETE ON memories
WHEN old.stems IS NULL BEGIN{_FORGET_COUNTS}END;

CREATE TRIGGER memories_terms_update AFTER UPDATE OF content, keywords ON memories
WHEN {_TEXT_CHANGED} AND old.stems IS NOT NULL AND new.stems IS NOT NULL
    AND new.stems IS NOT old.stems BEGIN
    UPDATE term_counts SET docs = docs - 1
    WHERE term IN (SELECT value FROM json_each({_terms("old.stems")}));
    UPDATE term_counts SET docs = docs + 1
    WHERE term IN (SELECT value FROM json_each({_terms("new.stems")}));{_FORGET_REWORDED}END;

CREATE TRIGGER memories_terms_update_unknown AFTER UPDATE OF content, keywords ON memories
WHEN {_TEXT_CHANGED} AND (old.stems IS NULL OR new.stems IS NULL OR new.stems IS old.stems)
BEGIN{_FORGET_COUNTS}END;
"""

_V14 = """
UPDATE memories SET stems = sealmem_stems(content, keywords)
WHERE content LIKE '%eed%' OR content LIKE '%ies%' OR content LIKE '%sses%'
    OR content LIKE '%yyed%' OR content LIKE '%yying%'
    OR keywords LIKE '%eed%' OR keywords LIKE '%ies%' OR keywords LIKE '%sses%'
    OR keywords LIKE '%yyed%' OR keywords LIKE '%yying%';

CREATE VIRTUAL TABLE IF NOT EXISTS temp.sealmem_v14_vocab USING fts5vocab(main, memories_fts, row);

DELETE FROM term_counts;

INSERT INTO term_counts (term, docs) SELECT term, doc FROM temp.sealmem_v14_vocab WHERE doc >= 1000;

DROP TABLE temp.sealmem_v14_vocab;

INSERT OR REPLACE INTO term_counts_at (one, memories, counted)
SELECT 1, memories, memories FROM store_counts;
"""

MIGRATIONS: list[Migration] = [
    Migration(1, "memories, supersedes, history, fts, meta", _V1),
    # Recall: neighbouring memories of one session (origin, time), and the text of
    # replaced versions for include_history.
    Migration(2, "recall: origin/time index, history full-text index", _V2),
    # Team sync (client/sync/replica.py): trusted roster/keyring envelopes, accepted chain
    # heads and witnesses per (writer, project), this member's own chain, refusals, runs.
    Migration(3, "team sync: trusted objects, chain heads, own chain, refusals", _V3),
    # own_chain.pushed_wall was packed as (wall << 20) + counter, which overflows a signed
    # 64-bit integer for a far-future wall; it is now protocol.hlc.pack (16 counter bits).
    Migration(4, "own chain: pushed_wall in the one HLC packing", _V4),
    # forget removes the text of every version: purge what older stores kept in history.
    Migration(5, "forget: purge the history of forgotten memories", _V5),
    # Batched merge and import: the batch writer fills memories_fts once per batch.
    Migration(6, "batch writes: full-text indexes filled once per batch", _V6),
    # Incremental push: stored bucket key, a log of written team rows, own-rows indexes.
    Migration(7, "push: bucket key, dirty log, own-rows indexes", _V7),
    # One change costs the same in any store: own counts kept by triggers, not scanned.
    Migration(8, "own counts kept by triggers, tombstones index", _V8),
    # A re-pull or an update that keeps the text does not run the redaction rules again.
    Migration(9, "redaction marks: text this store's rules already redacted", _V9),
    # A pull or an import pays the counting and logging triggers once per batch; a pulled
    # teammate's row never marks our buckets dirty; the journal reads a row count.
    Migration(10, "batch-aware counts, own-rows-only dirty log, row count", _V10),
    # Recall reads each candidate's stems instead of stemming its text (cold recall).
    Migration(11, "recall: stems kept per memory", _V11),
    # Recall reads the document counts of frequent terms instead of walking their postings.
    Migration(12, "recall: document counts of frequent terms", _V12),
    # Non-ASCII text: the stems are the index's own terms (SQLite's tokenizer), and a
    # stems value that is not a clean word list forgets the counts instead of failing.
    Migration(13, "recall: the index's terms for non-ASCII text, tolerant counting", _V13),
    # The Python stemmer stems as FTS5's porter on every ASCII word (it differed on a few).
    Migration(14, "recall: stems again where the stemmer was fixed", _V14),
]


def latest_version() -> int:
    """The schema version this code writes: the last migration's number."""
    return MIGRATIONS[-1].version if MIGRATIONS else 0
