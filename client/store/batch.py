"""Many winning versions written at once: what a pull or an import stores per batch.

:func:`write_versions` stores exactly what one :func:`~sealmem.client.store.rows.write_version`
per version stores (:func:`write_each`, the reference the property tests compare
it with: the same rows, row ids, history sequence and full-text index), with a
few statements per batch instead of four per version:

- the replaced versions go to ``history`` with one statement;
- new rows are inserted with one ``INSERT ... SELECT`` from a staging table
  (:func:`insert_staged`) and changed rows updated with one ``executemany``, in the
  order given, so row ids and history sequence numbers come out the same;
- what the insert triggers of ``memories`` do per row (the row count, the team counts
  per (project, editor), the dirty log; schema version 10) is done once per batch;
- ``memories_fts`` and ``history_fts`` are filled once for the whole batch: while
  ``fts_batch`` holds a row their per-row triggers stand aside (schema version 6),
  the old entries of updated rows whose text changed are deleted and the new text
  of those rows, of every added row and of every added history row is indexed by
  one statement each (an update that keeps the text keeps its index entry);
- supersede links are touched only for the rows whose links changed.

:func:`keep_versions` adds versions that did not win to ``history`` the same way
(:func:`keep_each` is its reference), and :func:`redact_version` is the one place
where a batch runs the redaction rules over a version from outside;
:func:`redact_versions` runs it over a batch, skipping the text this store's rules
already redacted (schema version 9, ``redaction_marks``).

A tombstone goes through :func:`~sealmem.client.store.rows.write_version` itself
(rare, and it purges covered text), after the versions before it are written,
so the order of effects is the caller's order.  Every id appears at most once in
a batch, and ``previous`` is its ``memories`` row as read in the same
transaction.  Run inside the caller's transaction.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ...protocol.errors import StoreError
from ...protocol.record import MAX_CONTENT_CHARS, MAX_KEYWORD_CHARS, MAX_REASON_CHARS, Record
from .connection import get_meta, set_meta
from .memory import Provenance
from .redact import Redacted, redact, secret_spans
from .rows import (
    HISTORY_COLUMNS,
    MEMORY_COLUMNS,
    MEMORY_VALUE_COLUMNS,
    archived_values,
    covers,
    history_values,
    insert_history,
    memory_row,
    record_from_row,
    record_json,
    write_version,
)

__all__ = [
    "Keep",
    "Write",
    "check_rules",
    "insert_staged",
    "keep_each",
    "keep_versions",
    "load_rows",
    "mark_redacted",
    "redact_version",
    "redact_versions",
    "rules_current",
    "write_each",
    "write_versions",
]


@dataclass(frozen=True, slots=True)
class Write:
    """One version to make the winner of its id, with its local state."""

    record: Record
    provenance: Provenance
    local_importance: float
    seen_count: int
    updated_at: int
    previous: sqlite3.Row | None
    """The ``memories`` row of ``record.id`` before this write (None: there is none)."""


def write_each(conn: sqlite3.Connection, writes: Sequence[Write]) -> int:
    """The reference: one :func:`write_version` per write; returns versions purged."""
    purged = 0
    for w in writes:
        purged += write_version(
            conn,
            w.record,
            provenance=w.provenance,
            local_importance=w.local_importance,
            seen_count=w.seen_count,
            updated_at=w.updated_at,
        )
    return purged


def write_versions(conn: sqlite3.Connection, writes: Sequence[Write]) -> int:
    """Write ``writes`` in order, batched (see the module docstring); returns versions
    purged (when not 0, run :func:`sealmem.client.store.scrub.settle` after committing)."""
    purged = 0
    run: list[Write] = []
    for w in writes:
        if w.record.deleted:
            _flush(conn, run)
            run = []
            purged += write_each(conn, [w])
        else:
            run.append(w)
    _flush(conn, run)
    return purged


_COLUMN = {name: i for i, name in enumerate(MEMORY_VALUE_COLUMNS)}
_ID, _CONTENT, _KEYWORDS = _COLUMN["id"], _COLUMN["content"], _COLUMN["keywords"]
_UPDATE = (
    "UPDATE memories SET "
    + ", ".join(f"{name} = ?" for name in MEMORY_VALUE_COLUMNS if name != "id")
    + " WHERE id = ?"
)


def _flush(conn: sqlite3.Connection, run: Sequence[Write]) -> None:
    """Write live versions (no tombstone among them) with a few statements."""
    if not run:
        return
    if len({w.record.id for w in run}) != len(run):
        raise StoreError("a batch of writes names one memory id twice; write it in two batches")
    rows = [
        memory_row(
            w.record,
            provenance=w.provenance,
            local_importance=w.local_importance,
            seen_count=w.seen_count,
            updated_at=w.updated_at,
        )
        for w in run
    ]
    added = [v for v, w in zip(rows, run, strict=True) if w.previous is None]
    changed = [(v, w.previous) for v, w in zip(rows, run, strict=True) if w.previous is not None]
    with _triggers_aside(conn):
        # the replaced versions, in order (a live version never covers text: archive all)
        insert_staged(
            conn,
            "history",
            HISTORY_COLUMNS,
            [archived_values(prev, w.updated_at) for w in run if (prev := w.previous) is not None],
        )
        (last,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()
        if added:
            insert_staged(conn, "memories", MEMORY_VALUE_COLUMNS, added)
            _count_added(conn, added)
        # an update that keeps the text (a reinforce, an importance) keeps its index entry
        retext = [
            (v, p)
            for v, p in changed
            if (v[_CONTENT], v[_KEYWORDS]) != (p["content"], p["keywords"])
        ]
        if retext:
            conn.executemany(
                "INSERT INTO memories_fts (memories_fts, rowid, content, keywords) "
                "VALUES ('delete', ?, ?, ?)",
                [(p["rowid"], p["content"], p["keywords"]) for _, p in retext],
            )
        if changed:
            conn.executemany(_UPDATE, [(*v[1:], v[_ID]) for v, _ in changed])
        if added:  # they hold every rowid above the last one before them
            conn.execute(
                "INSERT INTO memories_fts (rowid, content, keywords) "
                "SELECT rowid, content, keywords FROM memories WHERE rowid > ?",
                (last,),
            )
        if retext:
            conn.execute(
                "INSERT INTO memories_fts (rowid, content, keywords) "
                "SELECT rowid, content, keywords FROM memories "
                "WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([v[_ID] for v, _ in retext]),),
            )
    _relink(conn, run)


def insert_staged(
    conn: sqlite3.Connection,
    table: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
) -> None:
    """Insert ``rows`` (values of ``columns``) into ``table`` in their order, with one
    ``INSERT ... SELECT`` from a per-connection ``TEMP`` table they are first put in.

    Not one ``INSERT`` per row (``executemany``): each execution of an ``INSERT`` into a
    table with triggers opens a statement journal, and copies into it every page it is
    the first to touch (``memories`` has 9 indexes: ~16 µs a row of a 20 µs insert);
    one statement journals each page once.  The staging table holds no constraint and
    no affinity, so the values reach ``table`` as they were given."""
    if not rows:
        return
    names = ", ".join(columns)
    stage = f"temp.staged_{zlib.crc32(f'{table} ({names})'.encode()):08x}"
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {stage.partition('.')[2]} ({names})")
    try:
        conn.executemany(
            f"INSERT INTO {stage} ({names}) VALUES ({', '.join('?' * len(columns))})", rows
        )
        conn.execute(
            f"INSERT INTO main.{table} ({names}) SELECT {names} FROM {stage} ORDER BY rowid"
        )
    finally:
        conn.execute(f"DELETE FROM {stage}")


_OWN_COUNTS_ADD = (
    "INSERT INTO own_counts (project, editor, rows, live) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (project, editor) DO UPDATE SET "
    "rows = rows + excluded.rows, live = live + excluded.live"
)
_PROJECT, _EDITOR = _COLUMN["project"], _COLUMN["editor"]
_VISIBILITY, _DELETED = _COLUMN["visibility"], _COLUMN["deleted"]


def _count_added(conn: sqlite3.Connection, added: Sequence[Sequence[Any]]) -> None:
    """What the insert triggers of ``memories`` do per row (schema versions 7, 8 and 10;
    they stand aside while ``fts_batch`` holds a row), once for the rows ``added``: the
    row count, the team counts per (project, editor), and the dirty log of the rows of
    the member this store pushes as (every team row while none is named)."""
    conn.execute("UPDATE store_counts SET memories = memories + ?", (len(added),))
    team = [v for v in added if v[_VISIBILITY] == "team"]
    counts: dict[tuple[str, str], list[int]] = {}
    for v in team:
        n = counts.setdefault((v[_PROJECT], v[_EDITOR]), [0, 0])
        n[0] += 1
        n[1] += not v[_DELETED]
    conn.executemany(_OWN_COUNTS_ADD, [(p, e, n, live) for (p, e), (n, live) in counts.items()])
    row = conn.execute("SELECT editor FROM push_editor").fetchone()
    conn.executemany(
        "INSERT INTO push_dirty (project, id) VALUES (?, ?)",
        [(v[_PROJECT], v[_ID]) for v in team if row is None or v[_EDITOR] == row[0]],
    )


_HISTORY_FTS_FILL = """
INSERT INTO history_fts (rowid, content, keywords)
SELECT seq,
       coalesce(json_extract(record_json, '$.content'), ''),
       coalesce((SELECT group_concat(value, ' ') FROM json_each(record_json, '$.keywords')), '')
FROM history WHERE seq > ?
"""


@contextmanager
def _triggers_aside(conn: sqlite3.Connection) -> Iterator[None]:
    """The per-row full-text triggers and the insert triggers that count and log
    ``memories`` rows stand aside (``fts_batch``); the caller fills ``memories_fts`` and
    counts and logs the rows it inserts (:func:`_count_added`), and the ``history`` rows
    added meanwhile are indexed here, at once."""
    (last,) = conn.execute("SELECT coalesce(max(seq), 0) FROM history").fetchone()
    conn.execute("INSERT INTO fts_batch (one) VALUES (1)")
    try:
        yield
    finally:
        conn.execute("DELETE FROM fts_batch")
    conn.execute(_HISTORY_FTS_FILL, (last,))


def _relink(conn: sqlite3.Connection, run: Sequence[Write]) -> None:
    """Supersede links of live winners: only the rows whose links changed are touched."""
    stale: list[tuple[str]] = []
    links: list[tuple[str, str]] = []
    for w in run:
        record, prev = w.record, w.previous
        if prev is not None:
            same = not prev["deleted"] and json.loads(prev["supersedes_json"]) == list(
                record.supersedes
            )
            if same:
                continue
            stale.append((record.id,))
        links.extend((old, record.id) for old in record.supersedes)
    conn.executemany("DELETE FROM supersedes WHERE new_id = ?", stale)
    conn.executemany("INSERT OR IGNORE INTO supersedes (old_id, new_id) VALUES (?, ?)", links)


def load_rows(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, sqlite3.Row]:
    """The ``memories`` rows of ``ids`` (those that exist), in one query."""
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(set(ids))),),
    ).fetchall()
    return {str(row["id"]): row for row in rows}


def redact_version(record: Record) -> tuple[Record, dict[str, int]]:
    """``record`` with what the redaction rules catch replaced, and the types found
    (empty: it was clean and ``record`` itself is returned).

    The one call site of the rules for pulled and imported versions.  A version keeps
    its identity (id, clock, editor) so replicas still agree on the winner; only this
    store's copy of the text loses the secret (DESIGN §3).  A text that the
    placeholders make longer than its limit is cut to it (:func:`_fit`), so the version
    stays valid.  :func:`redact_versions` skips this for text this store's rules
    already redacted.
    """
    content = redact(record.content)
    clean = _CLEAN_WORDS
    words = (
        [] if all(w in clean for w in record.keywords) else list(map(_redact_word, record.keywords))
    )
    reason = None if record.delete_reason is None else redact(record.delete_reason)
    if len(record.keywords) > 1:
        across = _across_keywords([w.text for w in words] if words else list(record.keywords))
        if across is not None:
            words = across
    found = any(w.changed for w in words)
    if not content.changed and not found and (reason is None or not reason.changed):
        return record, {}
    if not words:
        words = [Redacted(word) for word in record.keywords]
    types = dict(content.found)
    for part in [*words, *([reason] if reason else [])]:
        for kind, n in part.found.items():
            types[kind] = types.get(kind, 0) + n
    cleaned = record.evolve(
        content=_fit(content.text, MAX_CONTENT_CHARS),
        keywords=tuple(_fit(w.text, MAX_KEYWORD_CHARS) for w in words),
        delete_reason=None if reason is None else _fit(reason.text, MAX_REASON_CHARS),
    )
    return cleaned, types


def _across_keywords(words: list[str]) -> list[Redacted] | None:
    """The keywords with the secrets that show only when they are read together
    (``["password=", "hunter2"]``) replaced, or None when there are none.

    The rules run once over the keywords joined by spaces (each already redacted on
    its own, so its placeholders stand); every part of a keyword that a secret covers
    becomes that secret's placeholder.  A clean joined text is remembered as a clean
    keyword is (the same keyword sets come back)."""
    joined = " ".join(words)
    if joined in _CLEAN_WORDS:
        return None
    spans = secret_spans(joined)
    if not spans:
        _remember_clean(joined)
        return None
    out: list[Redacted] = []
    counted: set[int] = set()  # a secret over several keywords counts once
    at = 0
    for word in words:
        start, end = at, at + len(word)
        at = end + 1
        hits = [(max(s, start), min(e, end), t, i) for i, (s, e, t) in enumerate(spans)]
        hits = [h for h in hits if h[0] < h[1]]
        text = word
        for s, e, t, _ in reversed(hits):
            text = f"{text[: s - start]}[REDACTED:{t}]{text[e - start :]}"
        counts = Counter(t for _, _, t, i in hits if i not in counted)
        counted.update(i for *_, i in hits)
        out.append(Redacted(text, dict(counts)) if hits else Redacted(word))
    return out


def _fit(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in an ellipsis, if it is longer.

    A placeholder is longer than many secrets (``pw=abcd1`` becomes
    ``pw=[REDACTED:password]``), so a text near its limit can outgrow it once redacted.
    Stored as it is, the version would be refused wherever it goes next (an export
    imported elsewhere, an edit pushed to the team); cut, it keeps its place and its
    text up to the limit.  The cut falls before a placeholder it would split."""
    if len(text) <= limit:
        return text
    cut = limit - 1
    opened = text.rfind("[REDACTED:", 0, cut)
    if opened != -1 and text.find("]", opened) >= cut:
        cut = opened
    return text[:cut] + "\u2026"


_MARKED = """
SELECT m.id, m.content, m.keywords_json, m.delete_reason, m.hlc_wall, m.hlc_counter, m.editor,
       k.hlc_wall = m.hlc_wall AND k.hlc_counter = m.hlc_counter AND k.editor = m.editor
FROM memories AS m LEFT JOIN redaction_marks AS k ON k.id = m.id
WHERE m.id IN (SELECT value FROM json_each(?))
"""


def redact_versions(
    conn: sqlite3.Connection, records: Iterable[Record]
) -> list[tuple[Record, dict[str, int]]]:
    """:func:`redact_version` of each record, in order, without running the rules over
    text this store's rules already redacted.

    The rules are skipped for a version whose content, keywords and delete reason equal
    those of its id's ``memories`` row *and* that row is marked: its text was written
    there by this function's caller after these rules ran (or these rules found it
    clean), under the rules version ``meta`` names.  A re-pull, a re-import, or an
    update that changes only metadata (importance, a reinforce) then costs one
    comparison.  Nothing a teammate or a file says is trusted: a mark is this store's
    own record of its own redaction, compared with this store's own text.  A rules
    change (:data:`~sealmem.client.store.redaction.RULES_VERSION`) clears every mark.

    A version is marked when it is newer than its id's row (it will be written, as
    redacted here, if it wins the merge), and a row when the redacted text equals its
    text (that text is clean under these rules).  Run inside the caller's transaction:
    if it rolls back, so do the marks.
    """
    records = list(records)
    if not records:
        return []
    check_rules(conn)
    rows = {
        str(row[0]): row
        for row in conn.execute(_MARKED, (json.dumps(sorted({r.id for r in records})),))
    }
    out: list[tuple[Record, dict[str, int]]] = []
    marks: list[tuple[str, int, int, str]] = []
    for record in records:
        row = rows.get(record.id)
        if row is not None and row[7] and _same_text(record, row):
            out.append((record, {}))
            continue
        cleaned, found = redact_version(record)
        out.append((cleaned, found))
        key = cleaned.order_key
        if row is None or key > (int(row[4]), int(row[5]), str(row[6])):
            marks.append((cleaned.id, *key))
        elif _same_text(cleaned, row):
            marks.append((cleaned.id, int(row[4]), int(row[5]), str(row[6])))
    mark_redacted(conn, marks)
    return out


def mark_redacted(conn: sqlite3.Connection, marks: Iterable[tuple[str, int, int, str]]) -> None:
    """Mark versions (id, HLC wall, HLC counter, editor) as holding text this store's
    rules redacted (or found clean), under the rules version :func:`check_rules` made
    current.  Run inside the caller's transaction."""
    conn.executemany(
        "INSERT OR REPLACE INTO redaction_marks (id, hlc_wall, hlc_counter, editor) "
        "VALUES (?, ?, ?, ?)",
        marks,
    )


def _same_text(record: Record, row: sqlite3.Row) -> bool:
    """Whether ``record`` holds the text (content, keywords, delete reason) of ``row``."""
    return bool(
        record.content == row[1]
        and record.delete_reason == row[3]
        and json.loads(row[2]) == list(record.keywords)
    )


def rules_current(conn: sqlite3.Connection) -> bool:
    """Whether the marks were made under the rules this process runs."""
    from .redaction import RULES_VERSION  # here: the rules load only where they run

    return get_meta(conn, "redaction_rules") == RULES_VERSION


def check_rules(conn: sqlite3.Connection) -> None:
    """Clear the marks when they were made under other rules than this process runs."""
    from .redaction import RULES_VERSION

    if get_meta(conn, "redaction_rules") != RULES_VERSION:
        conn.execute("DELETE FROM redaction_marks")
        set_meta(conn, "redaction_rules", RULES_VERSION)


_CLEAN_WORDS: set[str] = set()
_CLEAN_WORDS_MAX = 8192


def _redact_word(word: str) -> Redacted:
    """:func:`redact` of one keyword, remembering the clean ones: the same few hundred
    keywords come back in every batch (the rules are a pure function of the text).  A
    keyword with a secret is not remembered, so no secret outlives its batch here."""
    if word in _CLEAN_WORDS:
        return Redacted(word)
    result = redact(word)
    if not result.changed:
        _remember_clean(word)
    return result


def _remember_clean(text: str) -> None:
    if len(_CLEAN_WORDS) >= _CLEAN_WORDS_MAX:
        _CLEAN_WORDS.clear()
    _CLEAN_WORDS.add(text)


@dataclass(frozen=True, slots=True)
class Keep:
    """A version that did not win, for ``history``, with its local state."""

    record: Record
    provenance: Provenance
    local_importance: float
    seen_count: int
    updated_at: int
    replaced_at: int


def keep_each(conn: sqlite3.Connection, keeps: Sequence[Keep], *, skip_winner: bool) -> int:
    """The reference: each version added to ``history`` in turn unless the same version
    is there already (or, with ``skip_winner``, is the memory's winner), or its text is
    covered by the winning tombstone; returns how many were added."""
    added = 0
    for k in keeps:
        text = record_json(k.record)
        seen = conn.execute(
            "SELECT 1 FROM history WHERE id = ? AND record_json = ? LIMIT 1", (k.record.id, text)
        ).fetchone()
        if seen is not None:
            continue
        if skip_winner:
            current = load_rows(conn, [k.record.id]).get(k.record.id)
            if current is not None and record_from_row(current) == k.record:
                continue
        added += insert_history(
            conn,
            k.record,
            provenance=k.provenance,
            local_importance=k.local_importance,
            seen_count=k.seen_count,
            updated_at=k.updated_at,
            replaced_at=k.replaced_at,
        )
    return added


def keep_versions(conn: sqlite3.Connection, keeps: Sequence[Keep], *, skip_winner: bool) -> int:
    """:func:`keep_each`, with one read of the winners and of the kept versions of the
    batch's ids and one ``executemany``; returns how many were added."""
    if not keeps:
        return 0
    ids = sorted({k.record.id for k in keeps})
    current = load_rows(conn, ids)
    seen = {
        (str(r[0]), str(r[1]))
        for r in conn.execute(
            "SELECT id, record_json FROM history WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
    }
    values = []
    for k in keeps:
        key = (k.record.id, record_json(k.record))
        if key in seen:
            continue
        row = current.get(k.record.id)
        if row is not None:
            if skip_winner and record_from_row(row) == k.record:
                continue
            tomb = bool(row["deleted"]) and not k.record.deleted
            if tomb and covers(str(row["editor"]), str(row["transport"]), k.record.editor):
                continue
        seen.add(key)
        values.append(
            history_values(
                k.record,
                provenance=k.provenance,
                local_importance=k.local_importance,
                seen_count=k.seen_count,
                updated_at=k.updated_at,
                replaced_at=k.replaced_at,
            )
        )
    if values:
        with _triggers_aside(conn):
            insert_staged(conn, "history", HISTORY_COLUMNS, values)
    return len(values)
