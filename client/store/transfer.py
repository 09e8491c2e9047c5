"""Export and import: the whole store as one JSON document, and back.

The document (``format`` ``sealmem-export``, ``version`` 1) holds every current
record (tombstones and private ones included) with its local state and
provenance, every historical version, and the supersede links.  Records are in
their wire form (importance in thousandths), so ids, clocks and authors survive
a round trip exactly.

Import merges by last-write-wins per id (DESIGN §3), keeps the higher local
importance (importance floor), and puts losing versions in history: importing
the same document twice changes nothing the second time.  The whole document is
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
from ...protocol.hlc import ZERO
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
    """Apply one current record; return 'added', 'updated', 'unchanged' or 'skipped'."""
    incoming = entry.record
    row = load_row(conn, incoming.id)
    if row is None:
        write_version(
            conn,
            incoming,
            provenance=entry.provenance,
            local_importance=max(entry.local_importance, incoming.importance),
            seen_count=entry.seen_count,
            updated_at=entry.updated_at,
        )
        return "added"
    current = record_from_row(row)
    if current.project != incoming.project:
        warnings.append(
            f"skipped {incoming.id}: it belongs to project {incoming.project!r} in the export "
            f"but to {current.project!r} here"
        )
        return "skipped"
    floor = max(float(row["local_importance"]), entry.local_importance)
    if incoming.order_key > current.order_key:
        write_version(
            conn,
            incoming,
            provenance=entry.provenance,
            local_importance=max(floor, incoming.importance),
            seen_count=max(int(row["seen_count"]), entry.seen_count),
            updated_at=max(int(row["updated_at"]), entry.updated_at),
        )
        return "updated"
    if incoming != current:
        _add_history(conn, entry, entry.updated_at)
    if floor > float(row["local_importance"]):
        conn.execute("UPDATE memories SET local_importance = ? WHERE id = ?", (floor, incoming.id))
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


def import_document(
    conn: sqlite3.Connection,
    document: dict[str, Any],
    *,
    now_ms: int,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Merge an export into the store in one transaction; see the module docstring."""
    memories, history, warnings = _parse_document(document, now_ms)
    total = len(memories) + len(history)
    counts = {"added": 0, "updated": 0, "unchanged": 0, "skipped": 0}
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
