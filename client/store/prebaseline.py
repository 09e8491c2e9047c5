"""Stores of the pre-release builds, whose schema came before the version 1 baseline.

TO BE DELETED AT THE FIRST RELEASE (with its call sites in :mod:`.migrations`,
:mod:`.health` and :mod:`.recover`, and ``tests/client/test_prebaseline.py``).

A store they wrote is recognised by the name its ``schema_migrations`` gives version 1.
Every command but ``sealmem recover`` refuses it; the salvage (:mod:`.recover`) copies it
into a new store of the current schema and keeps the old file beside it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ...protocol.errors import StoreError
from .schema import BASELINE

__all__ = ["PreBaselineError", "check", "is_pre_baseline"]


class PreBaselineError(StoreError):
    """The store was written by a build from before the schema baseline."""


def is_pre_baseline(conn: sqlite3.Connection, baseline: str = BASELINE) -> bool:
    """Whether the store on ``conn`` was written by a pre-release build (its version 1
    is not named ``baseline``, the name of this code's migration 1)."""
    try:
        row = conn.execute("SELECT name FROM schema_migrations WHERE version = 1").fetchone()
    except sqlite3.OperationalError:  # no such table: an empty file, a new store
        return False
    return row is not None and str(row[0]) != baseline


def check(conn: sqlite3.Connection, path: Path | str, baseline: str = BASELINE) -> None:
    """Refuse a pre-baseline store, with the way out."""
    if is_pre_baseline(conn, baseline):
        raise PreBaselineError(
            f"the store {path} was written by a pre-release build of sealmem, whose schema "
            "this sealmem does not open; nothing was changed. Run 'sealmem recover' to copy "
            "its memories, history and team state into a store of the current schema (the "
            "old file is kept beside it)"
        )
