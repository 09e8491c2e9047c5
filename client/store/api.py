"""The store's writes and reads: :class:`LocalStore`, one SQLite store used from one
thread (:class:`sealmem.client.recall.api.MemoryStore` adds recall to it).

Every write ticks the store's hybrid logical clock and keeps the replaced
version in ``history``.  Secrets are redacted before anything is stored.
Errors are :class:`~sealmem.protocol.errors.SealmemError` subclasses:
:class:`InputError` for bad arguments, :class:`NotFoundError` for unknown ids,
:class:`StoreError` for an unusable store.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self, TextIO

from ...protocol.errors import InputError, NotFoundError
from ...protocol.record import MEMBER_RE, Source
from ..clock import now_ms
from ..paths import ensure_home, local_author, store_path
from . import export, health, ids, inputs, scrub, writes
from .connection import connect, connect_readonly, sqlite_errors, transaction
from .memory import SHARED_PROJECT, Check, ImportResult, Memory, RememberResult
from .redact import redact_reason, redact_texts, warning_for
from .rows import MEMORY_COLUMNS, load_row, memory_from_history_row, memory_from_row

__all__ = ["LocalStore"]

_JOINED_COLUMNS = ", ".join("m." + column.strip() for column in MEMORY_COLUMNS.split(","))


class LocalStore:
    """One local memory store (a SQLite file in WAL mode), a context manager."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: Path,
        author: str,
        clock: Callable[[], int],
        *,
        readonly: bool = False,
    ) -> None:
        self._conn = conn
        self.path = path
        self.author = author
        self._clock = clock
        self.readonly = readonly

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        author: str | None = None,
        clock: Callable[[], int] | None = None,
        readonly: bool = False,
        migrating: bool = True,
    ) -> Self:
        """Open (creating and migrating if needed) the store at ``path`` (None:
        ``<home>/store.db``) as ``author`` (None: the local member id); ``clock`` gives ms
        since the epoch.  ``readonly`` opens it without migrating or writing (a read-only
        file or directory can be read; an absent store is created first, as there is
        nothing in it to lose); writes through it raise :class:`StoreError`.  Not
        ``migrating`` (a hook, which must not start a migration it cannot finish): a store
        lacking only data-only migrations is opened as it is, one lacking a schema step
        raises :class:`~.migrations.MigrationNeededError`."""
        clock = clock or now_ms
        where = store_path(ensure_home()) if path is None else Path(path)
        where = where.expanduser().absolute()
        if author is None:
            author = local_author(ensure_home())
        if not MEMBER_RE.match(author):
            raise InputError(
                f"author {author!r} is not a member id (lower-case letters, digits, '_.-', "
                "at most 64 characters)"
            )
        if readonly:
            if not where.exists():
                connect(where, now_ms=clock()).close()
            conn = connect_readonly(where)
        else:
            conn = connect(where, now_ms=clock(), migrating=migrating)
        conn.row_factory = sqlite3.Row
        return cls(conn, where, author, clock, readonly=readonly)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = ", readonly=True" if self.readonly else ""
        return f"{type(self).__name__}({str(self.path)!r}, author={self.author!r}{mode})"

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection (for the sync engine and retrieval); same thread only."""
        return self._conn

    # -- writing ---------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        kind: str | None = None,
        keywords: Sequence[str] = (),
        importance: float = 0.5,
        project: str | None = None,
        supersedes: Sequence[str] = (),
        private: bool = False,
        origin: str = "api",
        new_kind: bool = False,
        source: Source = "person",
    ) -> RememberResult:
        """Store a memory, or reinforce the same one if the project already holds it.

        ``kind`` None means ``note`` for a new memory and "keep its kind" for a
        repeat; a kind given for a repeat makes a new version of that kind.  A kind
        that is neither built in (:data:`inputs.BUILTIN_KINDS`) nor used in this
        store before is refused unless ``new_kind`` (a typo is not a new kind).
        ``supersedes`` entries may be any form :meth:`resolve_id` accepts.  ``source``
        says who wrote the text: ``person`` (the CLI, the viewer), ``agent`` (an MCP
        tool), ``hook`` (a transcript capture), ``import``.
        """
        project = inputs.project(project)
        given_kind = None if kind is None else inputs.kind(kind)
        importance = inputs.importance(importance)
        origin = inputs.origin(origin)
        source = inputs.source(source)
        content = inputs.content(content)
        cleaned = redact_texts(content, inputs.keywords(keywords))
        words = list(cleaned.keywords)
        warnings = warning_for(cleaned.found) + warning_for(cleaned.found_keywords, "keywords")
        old_ids = inputs.supersedes(supersedes)
        now = self._clock()
        with sqlite_errors(self.path), transaction(self._conn):
            if given_kind is not None:
                inputs.known_kind(given_kind, writes.kinds_like(self._conn, given_kind), new_kind)
            old_ids = writes.resolve_links(self._conn, old_ids)
            twin = writes.find_twin(self._conn, project, cleaned.content, self.author)
            if twin is None:
                memory = writes.create(
                    self._conn,
                    author=self.author,
                    now=now,
                    project=project,
                    kind=given_kind or "note",
                    content=cleaned.content,
                    keywords=words,
                    importance=importance,
                    supersedes=old_ids,
                    private=private,
                    origin=origin,
                    source=source,
                )
                return RememberResult(memory, created=True, merged=False, warnings=warnings)
            # A private repeat of a team memory must not publish what came with it
            # (keywords, importance, kind, links): it only counts as seen, locally.
            shared_twin = private and twin["visibility"] == "team"
            old_kind = str(twin["kind"])
            memory, found_together = writes.reinforce(
                self._conn,
                twin,
                author=self.author,
                now=now,
                keywords=() if shared_twin else words,
                importance=0.0 if shared_twin else importance,
                kind=None if shared_twin else given_kind,
                supersedes=() if shared_twin else old_ids,
            )
        warnings += warning_for(found_together, "keywords")
        warnings += _repeat_warnings(memory, old_kind, "private" if private else "team")
        return RememberResult(memory, created=False, merged=True, warnings=warnings)

    def forget(self, memory_id: str, *, reason: str) -> Memory:
        """Replace a memory by a tombstone keeping its metadata and ``reason`` (redacted);
        the content and keywords of every version leave the tables, the full-text indexes,
        exports and the store's files (:mod:`sealmem.client.store.scrub`)."""
        reason = inputs.reason(reason)
        reason = redact_reason(reason)
        now = self._clock()
        with sqlite_errors(self.path), transaction(self._conn):
            row = self._row(memory_id)
            tomb = writes.tombstone(self._conn, row, author=self.author, now=now, reason=reason)
        with sqlite_errors(self.path):
            scrub.settle(self._conn)
        return tomb

    def share(self, memory_id: str) -> Memory:
        """Share a private memory with the team: a new version with ``visibility="team"``,
        its texts redacted again (the rules may have grown since it was stored); the
        private version stays in history.  A memory already shared is returned as it is;
        a forgotten one is refused (:class:`InputError`)."""
        now = self._clock()
        with sqlite_errors(self.path), transaction(self._conn):
            return writes.share(self._conn, self._row(memory_id), author=self.author, now=now)

    def set_importance(self, memory_id: str, importance: float) -> Memory:
        """Set a memory's importance (0..1) as a new version; a forgotten one is refused."""
        importance = inputs.importance(importance)
        now = self._clock()
        with sqlite_errors(self.path), transaction(self._conn):
            row = self._row(memory_id)
            return writes.set_importance(
                self._conn, row, author=self.author, now=now, importance=importance
            )

    # -- reading ---------------------------------------------------------------

    def resolve_id(self, text: str) -> str:
        """The full id of the memory ``text`` names (:func:`.ids.resolve`): the full id, or
        at least 8 hex digits that start or end it (the last 12, as the CLI prints them)."""
        with sqlite_errors(self.path):
            return ids.resolve(self._conn, text, where=f"the store {self.path}")

    def get(self, memory_id: str) -> Memory:
        """The current version of a memory (any form :meth:`resolve_id` accepts)."""
        with sqlite_errors(self.path):
            return memory_from_row(self._row(memory_id))

    def _row(self, memory_id: str) -> sqlite3.Row:
        full = self.resolve_id(memory_id)
        row = load_row(self._conn, full)
        if row is None:
            raise NotFoundError(f"memory {full} vanished; retry")
        return row

    def history(self, memory_id: str) -> list[Memory]:
        """Older versions of a memory, newest first (empty if it never changed)."""
        full = self.resolve_id(memory_id)
        with sqlite_errors(self.path):
            rows = self._conn.execute(
                "SELECT * FROM history WHERE id = ? ORDER BY seq DESC", (full,)
            ).fetchall()
        return [memory_from_history_row(row) for row in rows]

    def recent(
        self,
        *,
        limit: int = 20,
        project: str | None = None,
        all_projects: bool = False,
        forgotten: bool = False,
    ) -> list[Memory]:
        """Live memories (and tombstones with ``forgotten``), most recently updated first,
        in the project (+ shared) scope."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InputError(f"limit {limit} must be between 1 and 10000")
        where, params = "1" if forgotten else "deleted = 0", []
        scope = self._scope(project, all_projects)
        if scope is not None:
            where += f" AND project IN ({', '.join('?' * len(scope))})"
            params.extend(scope)
        with sqlite_errors(self.path):
            rows = self._conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE {where} "
                "ORDER BY updated_at DESC, rowid DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [memory_from_row(row) for row in rows]

    def superseded_by(self, ids: Sequence[str]) -> dict[str, list[Memory]]:
        """For each of ``ids`` that a live memory corrects: those memories, newest first."""
        replaced: dict[str, list[Memory]] = {}
        with sqlite_errors(self.path):
            for row in self._conn.execute(
                f"SELECT s.old_id AS replaced_id, {_JOINED_COLUMNS} "
                "FROM supersedes s JOIN memories m ON m.id = s.new_id "
                f"WHERE s.old_id IN ({', '.join('?' * len(ids))}) AND m.deleted = 0 "
                "ORDER BY m.updated_at DESC",
                list(ids),
            ):
                replaced.setdefault(row["replaced_id"], []).append(memory_from_row(row))
        return replaced

    def _scope(self, project: str | None, all_projects: bool) -> list[str] | None:
        if all_projects:
            return None
        name = inputs.project(project)
        return [name] if name == SHARED_PROJECT else [name, SHARED_PROJECT]

    # -- whole store -------------------------------------------------------------

    def export(self) -> dict[str, Any]:
        """Every record (tombstones, private ones, history, links) as a JSON-able document."""
        with sqlite_errors(self.path):
            return export.export_document(self._conn, now_ms=self._clock())

    def export_to(self, out: TextIO) -> int:
        """Write the export document to ``out`` one entry at a time (memory bounded
        whatever the store's size); return how many memories it holds."""
        with sqlite_errors(self.path):
            self._conn.execute("BEGIN")  # one consistent read of the whole store
            try:
                return export.write_export(self._conn, out, now_ms=self._clock())
            finally:
                self._conn.execute("COMMIT")

    def import_(
        self,
        document: dict[str, Any],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """Merge an export into this store (last-write-wins per id); idempotent."""
        from . import transfer  # the import path: never loaded by a recall or a hook

        with sqlite_errors(self.path):
            result = transfer.import_document(
                self._conn, document, now_ms=self._clock(), progress=progress
            )
            if result.updated:  # an imported tombstone may have purged a memory's text
                scrub.settle(self._conn)
        return result

    def import_stream(
        self,
        stream: TextIO,
        *,
        name: str = "the document",
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportResult:
        """:meth:`import_` for an export read from ``stream`` one entry at a time
        (``name`` says what it is in messages)."""
        from . import transfer

        with sqlite_errors(self.path):
            result = transfer.import_stream(
                self._conn, stream, now_ms=self._clock(), name=name, progress=progress
            )
            if result.updated:  # an imported tombstone may have purged a memory's text
                scrub.settle(self._conn)
        return result

    def stats(self) -> dict[str, Any]:
        """Counts by kind and project, sizes, schema version."""
        with sqlite_errors(self.path):
            return health.stats(self._conn, self.path, author=self.author)

    def doctor(self) -> list[Check]:
        """Integrity, full-text index, WAL mode, file modes, schema version."""
        return health.doctor(self._conn, self.path)

    def reindex(self, *, progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
        """Rebuild the full-text indexes (what 'doctor' asks for when they drift)."""
        with sqlite_errors(self.path), transaction(self._conn):
            return health.reindex(self._conn, progress)


def _repeat_warnings(memory: Memory, old_kind: str, wanted: str) -> list[str]:
    """What a repeat of a memory did that the caller did not ask for."""
    out = []
    record = memory.record
    if record.kind != old_kind:
        out.append(
            f"the same text was stored as a {old_kind}; it is a {record.kind} now (a new "
            f"version; the {old_kind} version is kept in history: "
            f"sealmem show {record.id} --history)"
        )
    if record.visibility != wanted:
        out.append(
            f"the same memory already exists as {record.visibility}; it stays so "
            "(forget it and remember it again to change that)"
        )
    return out
