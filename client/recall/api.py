"""The local Python API: :class:`MemoryStore`, the store's writes and reads plus recall.

>>> with MemoryStore.open() as store:                      # doctest: +SKIP
...     store.remember("pytest needs --import-mode=importlib here", kind="lesson")
...     hits = store.recall("pytest import mode")

The writes and reads are :class:`sealmem.client.store.api.LocalStore`'s (the store
layer, which never imports recall); this class adds what recall answers from them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...protocol.errors import InputError
from ..store import inputs
from ..store.api import LocalStore
from ..store.connection import sqlite_errors
from ..store.memory import DEFAULT_PROJECT, SHARED_PROJECT, Hit
from ..store.rows import MEMORY_COLUMNS, memory_from_row
from . import context, search
from .standing import Reader

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
    ) -> list[Hit]:
        """The ``k`` memories that best match ``query``; superseded ones carry replacements."""
        if not isinstance(query, str) or not query.strip():
            raise InputError("the query is empty; pass words to search for")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InputError(f"k={k} must be between 1 and {MAX_K}")
        kind_list = None if kinds is None else [inputs.kind(kind) for kind in kinds]
        conn = self.connection
        with sqlite_errors(self.path):
            scored = search.search(
                conn,
                query,
                k=k,
                projects=self._scope(project, all_projects),
                include_history=include_history,
                kinds=kind_list,
                now_ms=self._clock(),
            )
            ids = [item.id for item in scored]
            marks = ", ".join("?" * len(ids))
            rows = {
                row["id"]: row
                for row in conn.execute(
                    f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks})", ids
                )
            }
            replaced = self.superseded_by(ids)
        return [
            Hit(
                memory=memory_from_row(rows[item.id]),
                score=float(item.score),
                why=dict(item.why),
                superseded_by=replaced.get(item.id, []),
            )
            for item in scored
            if item.id in rows
        ]

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
