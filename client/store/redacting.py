"""The redaction rules over versions from outside: what a pull, an import and a push run.

:func:`redact_version` is the one place where the rules run over a version this store
did not write (a pulled or imported one, or our own before its first push);
:func:`redact_versions` runs it over a batch, skipping text this store's rules already
redacted: ``redaction_marks`` (schema version 9) names, per memory id, the version whose
text these rules wrote into ``memories`` or found clean there (:func:`mark_redacted`),
under the rules version ``meta`` names (:func:`check_rules`, :func:`rules_current`).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable

from ...protocol.record import MAX_CONTENT_CHARS, MAX_KEYWORD_CHARS, MAX_REASON_CHARS, Record
from .connection import get_meta, set_meta
from .redact import Redacted, redact, secret_spans

__all__ = [
    "check_rules",
    "mark_redacted",
    "redact_version",
    "redact_versions",
    "rules_current",
]


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
