"""Import: an export (:mod:`sealmem.client.store.export`) merged into the store.

:func:`import_stream` reads any such document (any whitespace or key order) one entry
at a time (:mod:`sealmem.client.store.jsonscan`); :func:`import_document` takes one held
in memory, through the same merge.  Records are in their wire form, so ids, clocks and
authors survive a round trip exactly.

Import merges through the protocol merge (:func:`sealmem.protocol.merge.merge`,
DESIGN §3: last-write-wins per id under ``version_key``), keeps the higher local
importance (importance floor, the export's local one included), and puts losing
versions in history: importing the same document twice changes nothing the
second time.  Entries are merged in batches (one read of the batch's rows, the
one writer, :mod:`sealmem.client.store.writer`), in document order, with
the same outcome as one entry at a time.  Records dated more than
``MAX_AHEAD_MS`` ahead of this machine's clock are not imported (a pull refuses
them too): their clock would become the store's, and teammates refuse a snapshot
that carries it.  The whole import is one transaction: a bad entry anywhere
refuses the import and nothing is written.  Imported versions get provenance
``transport="import"``, ``verified=False``: a file cannot prove who signed what.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, TextIO

from ...protocol.errors import InputError, ProtocolError
from ...protocol.hlc import MAX_AHEAD_MS, ZERO, Hlc, too_far_ahead
from ...protocol.merge import effective_importance, merge
from ...protocol.record import Record
from .connection import transaction
from .export import FORMAT, VERSION
from .jsonscan import JsonScanner, scan
from .memory import ImportResult, Provenance
from .redacting import redact_versions
from .rows import observe_hlc, record_from_row
from .writer import Batch, Keep, Local, Write, load_rows, write

__all__ = ["BATCH", "import_document", "import_stream"]

_LISTS = ("memories", "history")  # the members read element by element

BATCH = 2000
"""Entries merged per batch on import (as many as a pull merges per call: 500 ran ~9 %
slower per record, the memory held is a few megabytes more)."""


def _number(value: object, where: str, field: str, lo: float, hi: float) -> float:
    """``value`` as a float in [lo, hi], else an error naming ``where``.``field``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise InputError(f"{where}.{field} must be a number between {lo} and {hi}: {value!r}")
    return float(value)


def _parse(item: object, where: str, now_ms: int, *, history: bool) -> Keep:
    """One entry as the version it holds; a current record's ``replaced_at`` is its
    ``updated_at`` (when it lands in history, having lost)."""
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
    signer, signer_name = prov.get("signer"), prov.get("signer_name")
    updated_at = int(_number(local.get("updated_at", now_ms), where, "updated_at", 0, 2**62))
    replaced_at = updated_at
    if history:
        replaced_at = int(_number(item.get("replaced_at"), where, "replaced_at", 0, 2**62))
        replaced_at = replaced_at or now_ms
    return Keep(
        record,
        _provenance(
            signer if isinstance(signer, str) else None,
            signer_name if isinstance(signer_name, str) else None,
            now_ms,
        ),
        _number(local.get("local_importance", record.importance), where, "local_importance", 0, 1),
        int(_number(local.get("seen_count", 1), where, "seen_count", 1, 2**62)),
        updated_at,
        replaced_at,
    )


@functools.lru_cache(maxsize=256)
def _provenance(signer: str | None, signer_name: str | None, now_ms: int) -> Provenance:
    """An imported version's provenance (one object per signer: entries share it)."""
    return Provenance(
        transport="import",
        signer=signer,
        signer_name=signer_name,
        verified=False,
        received_at=now_ms,
    )


def _check_header(key: str, value: object) -> None:
    """Refuse a document that is not an export this sealmem reads (``format``, ``version``)."""
    if key == "format" and value != FORMAT:
        raise InputError(f"not a sealmem export: the document's 'format' must be {FORMAT!r}")
    if key == "version":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError("the export's 'version' must be a positive integer")
        if value > VERSION:
            raise InputError(
                f"the export has version {value}; this sealmem reads up to {VERSION}: "
                "upgrade sealmem ('pip install -U sealmem')"
            )


class _Importer:
    """Merges entries in document order, a batch at a time (see the module docstring)."""

    def __init__(
        self, conn: sqlite3.Connection, now_ms: int, progress: Callable[[int], None] | None
    ) -> None:
        self.conn, self.now_ms, self.progress = conn, now_ms, progress
        self.warnings: list[str] = []
        self.counts = {"added": 0, "updated": 0, "unchanged": 0, "skipped": 0}
        self.refused: list[str] = []  # the first few ids beyond the clock bound
        self.newest: Hlc = ZERO
        self.done = 0
        self._memories: list[tuple[str, Keep]] = []  # (where in the document, version)
        self._batch_ids: set[str] = set()
        self._history: list[tuple[str, Keep]] = []

    def _accept(self, item: object, where: str, *, history: bool) -> Keep | None:
        entry = _parse(item, where, self.now_ms, history=history)
        if too_far_ahead(entry.record.hlc, self.now_ms):
            self.counts["skipped"] += 1
            if len(self.refused) < 5:
                self.refused.append(entry.record.id)
            self._step(1)
            return None
        return entry

    def _step(self, n: int) -> None:
        if self.progress is not None:
            for _ in range(n):  # one call per entry
                self.done += 1
                self.progress(self.done)

    def memory(self, item: object, where: str) -> None:
        entry = self._accept(item, where, history=False)
        if entry is None:
            return
        if entry.record.id in self._batch_ids:
            self.flush_memories()  # one id per batch: the second sees the first's result
        self._memories.append((where, entry))
        self._batch_ids.add(entry.record.id)
        if len(self._memories) >= BATCH:
            self.flush_memories()

    def history(self, item: object, where: str) -> None:
        entry = self._accept(item, where, history=True)
        if entry is None:
            return
        self._history.append((where, entry))
        if len(self._history) >= BATCH:
            self.flush_history()

    def flush_memories(self) -> None:
        batch, self._memories = self._memories, []
        self._batch_ids.clear()
        if not batch:
            return
        rows = load_rows(self.conn, (e.record.id for _, e in batch))
        held = {rid: record_from_row(row) for rid, row in rows.items()}
        versions = self._redacted(batch, held)
        writes: list[Write] = []
        keeps: list[Keep] = []
        raised: list[Local] = []
        for entry in versions:
            rid = entry.record.id
            self.counts[
                self._decide(entry, rows.get(rid), held.get(rid), writes, keeps, raised)
            ] += 1
            self.newest = max(self.newest, entry.record.hlc)
        write(self.conn, Batch(writes=writes, keeps=keeps, skip_winner=True, local=raised))
        self._step(len(versions))

    def _decide(
        self,
        entry: Keep,
        row: sqlite3.Row | None,
        local: Record | None,
        writes: list[Write],
        keeps: list[Keep],
        raised: list[Local],
    ) -> str:
        """What one current record does (through the protocol merge): 'added', 'updated',
        'unchanged' or 'skipped'.  The winner is the one :func:`~sealmem.protocol.merge.merge`
        keeps; the importance floor is the greatest of this store's, the export's local
        one and the pure rule's (``row``: this store's row of its id, ``local`` the
        version it holds)."""
        incoming = entry.record
        here = 0.0 if row is None else float(row["local_importance"])
        floor = here if local is not None and here > local.importance else None
        outcome = merge(local, incoming, floor=floor)
        if outcome.skipped_reason is not None:
            self.warnings.append(
                f"skipped {incoming.id}: it belongs to project {incoming.project!r} in the "
                f"export but to {local.project if local else '?'!r} here"
            )
            return "skipped"
        winner = outcome.winner if outcome.winner is not None else incoming
        importance = max(effective_importance(winner, outcome.floor), entry.local_importance)
        if row is None or outcome.changed:
            seen = (
                entry.seen_count if row is None else max(int(row["seen_count"]), entry.seen_count)
            )
            when = (
                entry.updated_at if row is None else max(int(row["updated_at"]), entry.updated_at)
            )
            writes.append(
                Write(winner, entry.provenance, importance, seen, when, row, replaced=local)
            )
            return "added" if row is None else "updated"
        if outcome.loser is not None:
            keeps.append(entry)
        if importance > here:
            raised.append(Local(incoming.id, local_importance=importance))
            return "updated"
        return "unchanged"

    def _redacted(self, batch: list[tuple[str, Keep]], held: dict[str, Record]) -> list[Keep]:
        """The versions of ``batch`` through the redaction rules (skipped for text this
        store's rules already redacted: a re-import; ``held``: the versions this store's
        rows of their ids hold), a warning per cleaned entry."""
        out = []
        for (where, entry), (record, found) in zip(
            batch, redact_versions(self.conn, (e.record for _, e in batch), held), strict=True
        ):
            if found:
                self.warnings.append(f"{where} ({record.id}): redacted {', '.join(sorted(found))}")
                entry = replace(entry, record=record)
            out.append(entry)
        return out

    def flush_history(self) -> None:
        batch, self._history = self._history, []
        if not batch:
            return
        rows = load_rows(self.conn, (e.record.id for _, e in batch))
        held = {rid: record_from_row(row) for rid, row in rows.items()}
        write(self.conn, Batch(keeps=self._redacted(batch, held), skip_winner=True))
        self._step(len(batch))

    def finish(self) -> ImportResult:
        self.flush_memories()
        self.flush_history()
        if self.newest != ZERO:
            observe_hlc(self.conn, self.newest, self.now_ms)
        if self.refused:
            self.warnings.append(_refused_note(self.refused, self.counts["skipped"]))
        return ImportResult(**self.counts, warnings=self.warnings)


def _refused_note(ids: list[str], count: int) -> str:
    shown = ", ".join(ids[:5]) + (f" and {count - 5} more" if count > 5 else "")
    return (
        f"{count} records dated more than {MAX_AHEAD_MS // 86_400_000} days ahead were not "
        f"imported ({shown}): their clock would pin them and this store's clock; check the "
        "clock of the machine that exported them, export again and import that file"
    )


def _count_entries(stream: TextIO, name: str) -> int:
    """How many memories and history entries ``stream`` holds (0 when it cannot be read
    again from its start, e.g. a pipe); the stream is left at its start."""
    if not stream.seekable():
        return 0
    start = stream.tell()
    try:
        scanned = scan(JsonScanner(stream, name), _LISTS)
        return sum(1 for kind, _, _ in scanned if kind == "item")
    except InputError:
        return 0  # the import itself reports what is wrong, where
    finally:
        stream.seek(start)


def import_stream(
    conn: sqlite3.Connection,
    stream: TextIO,
    *,
    now_ms: int,
    name: str = "the document",
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """Merge an export read from ``stream`` into the store in one transaction.  Memory
    stays bounded by the largest entry (history that comes before the memories waits in
    a temporary file: it is merged after them).  ``progress`` is given the number of
    entries when ``stream`` can be read twice (a file: they are counted first)."""
    total = _count_entries(stream, name) if progress is not None else 0
    members = scan(JsonScanner(stream, name), _LISTS)
    return _merge(conn, members, total, now_ms=now_ms, progress=progress)


def import_document(
    conn: sqlite3.Connection,
    document: object,
    *,
    now_ms: int,
    progress: Callable[[int, int], None] | None = None,
) -> ImportResult:
    """:func:`import_stream` for an export held in memory (what ``json.load`` gives)."""
    if not isinstance(document, dict):
        document = {"format": None}  # refused as not an export, by the one header check
    total = sum(len(v) for k, v in document.items() if k in _LISTS and isinstance(v, list))
    return _merge(conn, _members(document), total, now_ms=now_ms, progress=progress)


def _members(document: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """An export held in memory, member by member as :func:`.jsonscan.scan` reads one."""
    for key, value in document.items():
        if key in _LISTS and isinstance(value, list):
            for item in value:
                yield "item", key, item
        else:
            yield "value", key, value


def _merge(
    conn: sqlite3.Connection,
    members: Iterable[tuple[str, str, Any]],
    total: int,
    *,
    now_ms: int,
    progress: Callable[[int, int], None] | None,
) -> ImportResult:
    """Merge an export's members (as :func:`.jsonscan.scan` yields them), in one transaction."""
    seen_keys: set[str] = set()
    with transaction(conn), tempfile.TemporaryFile("w+", encoding="utf-8") as held:
        report = None if progress is None or not total else lambda done: progress(done, total)
        importer = _Importer(conn, now_ms, report)
        memory_count = held_count = 0
        for kind, key, value in members:
            if kind == "value":
                _check_header(key, value)
                if key in ("memories", "history"):
                    raise InputError(f"the export's {key!r} must be a list")
                seen_keys.add(key)
            elif key == "memories":
                seen_keys.add(key)
                importer.memory(value, f"memories[{memory_count}]")
                memory_count += 1
            elif "memories" in seen_keys:
                importer.flush_memories()
                importer.history(value, f"history[{held_count}]")
                held_count += 1
            else:
                held.write(json.dumps(value) + "\n")
                held_count += 1
        for key in ("format", "version"):
            if key not in seen_keys:
                _check_header(key, None)
        importer.flush_memories()
        held.seek(0)
        for i, line in enumerate(held):
            importer.history(json.loads(line), f"history[{i}]")
        return importer.finish()
