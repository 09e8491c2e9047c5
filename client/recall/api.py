"""The local Python API: :class:`MemoryStore`, the store's writes and reads plus recall.

>>> with MemoryStore.open() as store:                      # doctest: +SKIP
...     store.remember("pytest needs --import-mode=importlib here", kind="lesson")
...     hits = store.recall("pytest import mode")

The writes and reads are :class:`sealmem.client.store.api.LocalStore`'s (the store
layer, which never imports recall); this class adds what recall answers from them.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import partial

from ...protocol.errors import InputError
from ..store import freshness, inputs, periods
from ..store.api import LocalStore
from ..store.connection import sqlite_errors
from ..store.memory import DEFAULT_PROJECT, SHARED_PROJECT, Hit, Memory, RememberResult
from ..store.rows import MEMORY_COLUMNS, memory_from_row
from . import context, search
from .matching import MAX_RELATED
from .standing import PROPOSED_DELETE, Reader

__all__ = ["MAX_K", "MemoryStore"]

MAX_K = 100


class MemoryStore(LocalStore):
    """One local memory store (a SQLite file in WAL mode); a context manager."""

    def recall(
        self,
        query: str,
        *,
        k: int = 5,
        project: str | None = None,
        all_projects: bool = False,
        include_history: bool = False,
        kinds: Sequence[str] | None = None,
        related_within: int | None = None,
    ) -> list[Hit]:
        """The ``k`` memories that best match ``query``, then at most two ``related`` ones
        among the best ``related_within`` (``k`` unless given: a caller that asks for more
        to fold near-duplicates passes the number it shows); none when nothing matches;
        superseded ones carry replacements."""
        if not isinstance(query, str) or not query.strip():
            raise InputError("the query is empty; pass words to search for")
        for name, n in (
            ("k", k),
            ("related_within", k if related_within is None else related_within),
        ):
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_K:
                raise InputError(f"{name}={n} must be between 1 and {MAX_K}")
        kind_list = None if kinds is None else [inputs.kind(kind) for kind in kinds]
        conn, projects = self.connection, self._scope(project, all_projects)
        with sqlite_errors(self.path):
            asked = partial(
                search.search, conn, query, k=k, projects=projects, kinds=kind_list,
                now_ms=self._clock(), related_within=related_within,
            )  # fmt: skip
            scored = asked(include_history=include_history)
            if self._proposed_deletes(projects, 1, ordered=False):  # their text is history
                kept = asked(include_history=True, which=PROPOSED_DELETE)
                both = sorted([*scored, *kept], key=lambda s: (s.related, -s.score))
                related = [s for s in both if s.related][:MAX_RELATED]
                scored = [*[s for s in both if not s.related][:k], *related]
            ids = [item.id for item in scored]
            marks = ", ".join("?" * len(ids))
            rows = {
                row["id"]: row
                for row in conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks})", ids
                )
            }
            replaced = self.superseded_by(ids)
            stands = self._standing([memory_from_row(rows[i]) for i in ids if i in rows])
            # a teammate's proposed delete: the author's version stands, and may be stale
            gone = [m for m in stands.values() if m.deleted]
            resolved = self.reader().resolve_all(gone) if gone else {}
            versions = {i: s.memory for i, s in resolved.items() if s is not None}
            versions = {**stands, **versions}
            days, now = self.review_period(), self._clock()
            old = [
                i for i, m in versions.items() if freshness.is_stale(m, freshness.NONE, now, days)
            ]
            mine = freshness.seen(conn, old)  # only what its own times leave stale: often none
        none = freshness.NONE
        return [
            Hit(
                memory=stands[item.id],
                score=float(item.score),
                why=dict(item.why),
                superseded_by=replaced.get(item.id, []),
                related=item.related,
                stale=freshness.is_stale(versions[item.id], mine.get(item.id, none), now, days),
            )
            for item in scored
            if item.id in stands
        ]

    # -- staleness (:mod:`..store.freshness`) --------------------------------------

    def review_period(self) -> int:
        """Days after which a memory no one confirmed is stale (:meth:`period`)."""
        return self.period(periods.STALE).days

    def set_review_period(self, days: int) -> int:
        """Set this machine's own stale period (it wins over the team's)."""
        return self.set_period(periods.STALE, days).days

    def period(self, name: str) -> periods.Period:
        """Period ``name`` (``review_days``, ``stale_days``) as applied here, with its source."""
        with sqlite_errors(self.path):
            return periods.period(self.connection, name)

    def applied_periods(self) -> dict[str, periods.Period]:
        """Both periods as applied here: ``review_days`` and ``stale_days``."""
        return {name: self.period(name) for name in (periods.REVIEW, periods.STALE)}

    def set_period(self, name: str, days: int | None) -> periods.Period:
        """Set this machine's own period ``name``; None drops it (the team's applies)."""
        with sqlite_errors(self.path):
            if days is None:
                return periods.clear_local(self.connection, name)
            return periods.set_local(self.connection, name, days)

    def recall_due(self, ids: Sequence[str]) -> list[str]:
        """Those of ``ids`` (recalled now) whose recorded recall is missing or a day old."""
        with sqlite_errors(self.path):
            return freshness.recall_due(freshness.seen(self.connection, ids), ids, self._clock())

    def note_recalled(self, ids: Sequence[str]) -> int:
        """Record that ``ids`` were recalled now (at most one write a day per memory)."""
        with sqlite_errors(self.path):
            return freshness.note_recalled(self.connection, ids, self._clock())

    def keep(self, memory_id: str) -> Memory:
        """Confirm a memory now: its review clock starts again."""
        memory = self.get(memory_id)
        with sqlite_errors(self.path):
            freshness.keep(self.connection, memory.id, self._clock())
        return memory

    def correct(self, memory_id: str, content: str, *, origin: str) -> RememberResult:
        """``review correct``: a person's corrected text as a new memory that supersedes
        this one, with its project, kind, keywords, importance and visibility (a private
        memory's correction stays private); a forgotten memory is refused."""
        old = self.get(memory_id)
        if old.deleted:
            raise InputError(
                f"memory {old.id} is forgotten: there is nothing to correct; store the right "
                "text with: sealmem remember 'TEXT'"
            )
        return self.remember(
            content,
            kind=old.kind,
            keywords=list(old.record.keywords),
            importance=old.record.importance,
            project=old.project,
            supersedes=[old.id],
            private=old.record.visibility == "private",
            origin=origin,
            source="person",
        )

    def stale(
        self, *, project: str | None = None, all_projects: bool = False
    ) -> list[tuple[Memory, int]]:
        """Live memories no one confirmed within the review period, with when they last
        were, oldest first (:func:`..store.freshness.stale_memories`)."""
        scope = self._scope(project, all_projects)
        with sqlite_errors(self.path):
            conn = self.connection
            days = periods.period(conn, periods.STALE).days
            return freshness.stale_memories(conn, scope, self._clock(), days)

    def recent(
        self,
        *,
        limit: int = 20,
        project: str | None = None,
        all_projects: bool = False,
        forgotten: bool = False,
    ) -> list[Memory]:
        """Live memories, and those a teammate proposes to delete (the tombstone, which
        :meth:`.standing.Reader.resolve` shows as the author's version beside the
        proposal), most recently updated first; every tombstone too with ``forgotten``."""
        live = super().recent(
            limit=limit, project=project, all_projects=all_projects, forgotten=forgotten
        )
        if forgotten:
            return live
        scope = self._scope(project, all_projects)
        kept: list[Memory] = []
        with sqlite_errors(self.path):
            for offset in itertools.count(0, limit):
                tombs = self._proposed_deletes(scope, limit, offset)
                kept.extend(self._standing(tombs).values())
                if len(tombs) < limit or len(kept) >= limit:
                    break
        both = sorted([*live, *kept], key=lambda m: m.updated_at, reverse=True)
        return both[:limit]

    def _proposed_deletes(
        self, scope: Sequence[str] | None, limit: int, offset: int = 0, ordered: bool = True
    ) -> list[Memory]:
        """Tombstones in ``scope`` that may be a teammate's proposal, newest first (any
        first, sooner, unless ``ordered``), read through the index of team tombstones."""
        where, params = PROPOSED_DELETE, list(scope or [])
        if scope is not None:
            where += f" AND m.project IN ({', '.join('?' * len(scope))})"
        order = "ORDER BY updated_at DESC, rowid DESC" if ordered else ""
        rows = self.connection.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} {order} LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return [memory_from_row(row) for row in rows]

    def _standing(self, memories: list[Memory]) -> dict[str, Memory]:
        """``{id: memory}`` of those of ``memories`` that still stand for this reader: a
        live one, or a tombstone that is a teammate's proposal (not one that applies)."""
        gone = [m for m in memories if m.deleted]
        resolved = self.reader().resolve_all(gone) if gone else {}
        return {m.id: m for m in memories if not m.deleted or resolved.get(m.id) is not None}

    def startup_context(self, *, project: str | None = None, budget_tokens: int = 1200) -> str:
        """Text for the start of an agent session: warnings and decisions first; "" if none."""
        scope = self._scope(project, False) or [DEFAULT_PROJECT, SHARED_PROJECT]
        with sqlite_errors(self.path):
            return context.startup_context(
                self.connection,
                projects=scope,
                me=self.author,
                budget_tokens=budget_tokens,
                now=self._clock(),
            )

    def now(self) -> int:
        """This store's clock, ms since the epoch."""
        return int(self._clock())

    def reader(self) -> Reader:
        """This reader's trust state (:class:`.standing.Reader`), read now."""
        with sqlite_errors(self.path):
            return Reader(self.connection, self.author, self._clock())
