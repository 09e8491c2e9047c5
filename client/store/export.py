"""Export: the whole store as one JSON document (``format`` ``sealmem-export``, ``version`` 1).

It holds every current record (tombstones and private ones included) with its local
state and provenance, every historical version, and the supersede links.
:func:`write_export` writes it one entry per line straight from cursors over the store
(memory bounded whatever its size); :mod:`sealmem.client.store.transfer` reads it back.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from .connection import get_meta
from .migrations import schema_version
from .rows import memory_from_history_row, memory_from_row

__all__ = ["FORMAT", "VERSION", "export_document", "write_export"]

FORMAT = "sealmem-export"
VERSION = 1


def _header(conn: sqlite3.Connection, now_ms: int) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": now_ms,
        "store_id": get_meta(conn, "store_id"),
        "schema_version": schema_version(conn),
    }


def _versions(conn: sqlite3.Connection, table: str) -> Iterator[dict[str, Any]]:
    """The entries of ``memories`` or ``history`` (with when each was replaced)."""
    history = table == "history"
    for row in conn.execute(f"SELECT * FROM {table} ORDER BY {'seq' if history else 'rowid'}"):
        memory = memory_from_history_row(row) if history else memory_from_row(row)
        entry: dict[str, Any] = {
            "record": memory.record.to_wire(),
            "local": {
                "local_importance": float(row["local_importance"]),
                "seen_count": int(row["seen_count"]),
                "updated_at": int(row["updated_at"]),
            },
            "provenance": memory.provenance.to_dict(),
        }
        if history:
            entry["replaced_at"] = int(row["replaced_at"])
        yield entry


def _links(conn: sqlite3.Connection) -> Iterator[list[str]]:
    for r in conn.execute("SELECT old_id, new_id FROM supersedes ORDER BY old_id, new_id"):
        yield [str(r[0]), str(r[1])]


def export_document(conn: sqlite3.Connection, *, now_ms: int) -> dict[str, Any]:
    """The document :func:`write_export` writes, built in memory."""
    return {
        **_header(conn, now_ms),
        "memories": list(_versions(conn, "memories")),
        "history": list(_versions(conn, "history")),
        "supersedes": list(_links(conn)),
    }


def write_export(conn: sqlite3.Connection, out: TextIO, *, now_ms: int) -> int:
    """Write the export document to ``out`` one entry per line, straight from cursors over
    the store (memory bounded whatever its size; ASCII, so a terminal cannot act on it).
    Returns how many memories it holds.  Run it inside a read transaction for a
    consistent document."""

    def dump(value: Any) -> str:
        return json.dumps(value, ensure_ascii=True, sort_keys=True)

    header = _header(conn, now_ms)
    out.write("{" + ", ".join(f"{dump(k)}: {dump(v)}" for k, v in header.items()) + ",\n")
    count = 0
    sections: list[tuple[str, Iterable[Any]]] = [
        ("memories", _versions(conn, "memories")),
        ("history", _versions(conn, "history")),
        ("supersedes", _links(conn)),
    ]
    for i, (name, items) in enumerate(sections):
        out.write(f"{dump(name)}: [")
        first = True
        for item in items:
            out.write(("\n" if first else ",\n") + dump(item))
            first = False
            count += name == "memories"
        out.write("\n]" + (",\n" if i < len(sections) - 1 else "}\n"))
    return count
