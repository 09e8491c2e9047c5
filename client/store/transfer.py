"""Export and import: the whole store as one JSON document, and back.

The document (``format`` ``sealmem-export``, ``version`` 1) holds every current
record (tombstones and private ones included) with its local state and
provenance, every historical version, and the supersede links.  Records are in
their wire form (importance in thousandths), so ids, clocks and authors survive
a round trip exactly.

Import merges through the protocol merge (:func:`sealmem.protocol.merge.merge`,
DESIGN §3: last-write-wins per id under ``version_key``), keeps the higher local
importance (importance floor, the export's local one included), and puts losing
versions in history: importing the same document twice changes nothing the
second time.  Records dated more than ``MAX_AHEAD_MS`` ahead of this machine's
clock are not imported (a pull refuses them too): their clock would become the
store's, and teammates refuse a snapshot that carries it.  The whole document is
validated before anything is written; a bad entry refuses the import.
Imported versions get provenance ``transport="import"``, ``verified=False``:
a file cannot prove who signed what.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...protocol.errors import InputError, ProtocolError
from ...protocol.hlc import MAX_AHEAD_MS, ZERO, too_far_ahead
from ...protocol.merge import effective_importance, merge
from ...protocol.record import Record
from .connection import get_meta, schema_version, transaction
from .memory import ImportResult, Provenance
from .redact import redact, redact_all
from .rows import (
    insert_history,
    load_row,
    memory_from_history_row,
    memory_from_row,
    observe_hlc,
    record_from_row,
    record_json,
    write_version,
)

__all__ = ["FORMAT", "VERSION", "export_document", "import_document"]

FORMAT = "sealmem-export"
VERSION = 1


def _local(memory_row: sqlite3.Row) -> dict[str, Any]:
    return {
        "local_importance": float(memory_row["local_importance"]),
        "seen_count": int(memory_row["seen_count"]),
        "updated_at": int(memory_row["updated_at"]),
    }


def export_document(conn: sqlite3.Connection, *, now_ms: int) -> dict[str, Any]:
    """Everything in the store, as a JSON-able document."""
    memories = []
    for row in conn.execute("SELECT * FROM memories ORDER BY rowid"):
        memory = memory_from_row(row)
        memories.append(
            {
                "record": memory.record.to_wire(),
                "local": _local(row),
                "provenance": memory.provenance.to_dict(),
            }
        )
    history = []
    for row in conn.execute("SELECT * FROM history ORDER BY seq"):
        memory = memory_from_history_row(row)
        history.append(
            {
                "record": memory.record.to_wire(),
                "local": _local(row),
                "provenance": memory.provenance.to_dict(),
                "replaced_at": int(row["replaced_at"]),
            }
        )
    links = [
        [str(r[0]), str(r[1])]
        for r in conn.execute("SELECT old_id, new_id FROM supersedes ORDER BY old_id, new_id")
    ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": now_ms,
        "store_id": get_meta(conn, "store_id"),
        "schema_version": schema_version(conn),
        "memories": memories,
        "history": history,
        "supersedes": links,
    }


@dataclass(frozen=True)
class _Entry:
    record: Record
    local_importance: float
    seen_count: int
    updated_at: int
    provenance: Provenance
    replaced_at: int | None


def _number(value: object, where: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise InputError(f"{where} must be a number between {lo} and {hi}: {value!r}")
    return float(value)


def _parse(item: object, where: str, now_ms: int, *, history: bool) -> tuple[_Entry, list[str]]:
    if not isinstance(item, dict):
        raise InputError(f"{where} must be an object")
    try:
        record = Record.from_wire(item.get("record"))
    except ProtocolError as exc:
        raise InputError(f"{where}: {exc}") from exc
    local = item.get("local") or {}
    prov = item.get("provenance") or {}
    if not isinstance(local, dict) or not isinstance(prov, dict):
        raise InputError(f"{where}: 'local' and 'provenance' must be objects")
    content = redact(record.content)
    keywords, found_kw = redact_all(record.keywords)
    reason = None if record.delete_reason is None else redact(record.delete_reason)
    warnings = []
    if content.changed or found_kw or (reason is not None and reason.changed):
        record = record.evolve(
            content=content.text,
            keywords=tuple(keywords),
            delete_reason=None if reason is None else reason.text,
        )
        types = sorted({*content.found, *found_kw, *(reason.found if reason else {})})
        warnings.append(f"{where} ({record.id}): redacted {', '.join(types)}")
    signer = prov.get("signer")
    signer_name = prov.get("signer_name")
    replaced_at = item.get("replaced_at") if history else None
    entry = _Entry(
        record=record,
        local_importance=_number(
            local.get("local_importance", record.importance), f"{where}.local_importance", 0, 1
        ),
        seen_count=int(_number(local.get("seen_count", 1), f"{where}.seen_count", 1, 2**62)),
        updated_at=int(_number(local.get("updated_at", now_ms), f"{where}.updated_at", 0, 2**62)),
        provenance=Provenance(
            transport="import",
            signer=signer if isinstance(signer, str) else None,
            signer_name=signer_name if isinstance(signer_name, str) else None,
            verified=False,
            received_at=now_ms,
        ),
        replaced_at=int(_number(replaced_at, f"{where}.replaced_at", 0, 2**62))
        if history
        else None,
    )
    return entry, warnings


def _parse_document(document: object, now_ms: int) -> tuple[list[_Entry], list[_Entry], list[str]]:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InputError(f"not a sealmem export: the document's 'format' must be {FORMAT!r}")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InputError("the export's 'version' must be a positive integer")
    if version > VERSION:
        raise InputError(
            f"the export has version {version}; this sealmem reads up to {VERSION}: "
            "upgrade sealmem ('pip install -U sealmem')"
        )
    warnings: list[str] = []
    parsed: dict[str, list[_Entry]] = {"memories": [], "history": []}
    for key in ("memories", "history"):
        items = document.get(key, [])
        if not isinstance(items, list):
            raise InputError(f"the export's {key!r} must be a list")
        for i, item in enumerate(items):
            entry, notes = _parse(item, f"{key}[{i}]", now_ms, history=key == "history")
            parsed[key].append(entry)
            warnings.extend(notes)
    return parsed["memories"], parsed["history"], warnings


def _merge(conn: sqlite3.Connection, entry: _Entry, warnings: list[str]) -> str:
    """Apply one current record through the protocol merge; return 'added', 'updated',
    'unchanged' or 'skipped'.

    The winner is the one :func:`~sealmem.protocol.merge.merge` keeps; the importance
    floor is the greatest of this store's, the export's local one and the pure rule's.
    """
    incoming = entry.record
    row = load_row(conn, incoming.id)
    local = None if row is None else record_from_row(row)
    here = 0.0 if row is None else float(row["local_importance"])
    floor = here if local is not None and here > local.importance else None
    outcome = merge(local, incoming, floor=floor)
    if outcome.skipped_reason is not None:
        warnings.append(
            f"skipped {incoming.id}: it belongs to project {incoming.project!r} in the export "
            f"but to {local.project if local else '?'!r} here"
        )
        return "skipped"
    winner = outcome.winner if outcome.winner is not None else incoming
    importance = max(effective_importance(winner, outcome.floor), entry.local_importance)
    if row is None or outcome.changed:
        write_version(
            conn,
            winner,
            provenance=entry.provenance,
            local_importance=importance,
            seen_count=entry.seen_count
            if row is None
            else max(int(row["seen_count"]), entry.seen_count),
            updated_at=entry.updated_at
            if row is None
            else max(int(row["updated_at"]), entry.updated_at),
        )
        return "added" if row is None else "updated"
    if outcome.loser is not None:
        _add_history(conn, entry, entry.updated_at)
    if importance > here:
        conn.execute(
            "UPDATE memories SET local_importance = ? WHERE id = ?", (importance, incoming.id)
        )
        return "updated"
    return "unchanged"


def _add_history(conn: sqlite3.Connection, entry: _Entry, replaced_at: int) -> None:
    text = record_json(entry.record)
    seen = conn.execute(
        "SELECT 1 FROM history WHERE id = ? AND record_json = ? LIMIT 1", (entry.record.id, text)
    ).fetchone()
    current = load_row(conn, entry.record.id)
    if seen is not None or (current is not None and record_from_row(current) == entry.record):
        return
    insert_history(
        conn,
        entry.record,
        provenance=entry.provenance,
        local_importance=entry.local_importance,
        seen_count=entry.seen_count,
        updated_at=entry.updated_at,
        replaced_at=replaced_at,
    )


def _too_far_ahead(entries: list[_Entry], now_ms: int) -> tuple[list[_Entry], list[str]]:
    """The entries within the clock bound, and the ids of those beyond it."""
    kept, refused = [], []
    for entry in entries:
        if too_far_ahead(entry.record.hlc, now_ms):
            refused.append(entry.record.id)
        else:
            kept.append(entry)
    return kept, refused


def _refused_note(ids: list[str]) -> str:
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return (
        f"{len(ids)} records dated more than {MAX_AHEAD_MS // 86_400_000} days ahead were not "
        f"imported ({shown}): their clock would pin them and this store's clock; check the "
        "clock of the machine that exported them, export again and import that file"
    )


def import_document(
    conn: sqlite3.Connection,
    document: dict[str, Any],
    *,
    now_ms: int,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Merge an export into the store in one transaction; see the module docstring.

    Records dated more than ``MAX_AHEAD_MS`` ahead of ``now_ms`` are not imported
    (counted as skipped, named in a warning), as a pull refuses them (``clock-ahead``).
    """
    memories, history, warnings = _parse_document(document, now_ms)
    memories, refused = _too_far_ahead(memories, now_ms)
    history, refused_history = _too_far_ahead(history, now_ms)
    refused += refused_history
    if refused:
        warnings.append(_refused_note(refused))
    total = len(memories) + len(history)
    counts = {"added": 0, "updated": 0, "unchanged": 0, "skipped": len(refused)}
    done = 0
    with transaction(conn):
        newest = ZERO
        for entry in memories:
            counts[_merge(conn, entry, warnings)] += 1
            newest = max(newest, entry.record.hlc)
            done += 1
            if progress is not None:
                progress(done, total)
        for entry in history:
            _add_history(conn, entry, entry.replaced_at or now_ms)
            done += 1
            if progress is not None:
                progress(done, total)
        if newest != ZERO:
            observe_hlc(conn, newest, now_ms)
    return ImportResult(
        added=counts["added"],
        updated=counts["updated"],
        unchanged=counts["unchanged"],
        skipped=counts["skipped"],
        warnings=warnings,
    )
