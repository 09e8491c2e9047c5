"""How the store's text is read: UTF-8, with U+FFFD for bytes that are not (another tool,
a damaged disk), so that such a row is read rather than failing every query (``sealmem
doctor`` names it); and a fast read for wide rows that falls back to that rule."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

__all__ = ["read_rows", "read_text"]


def read_text(data: bytes) -> str:
    """The text factory of every store connection: UTF-8, U+FFFD where it does not decode."""
    return str(data, "utf-8", "replace")


def read_rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """``conn.execute(sql, params).fetchall()`` for a read (safe to run twice), its text
    decoded by SQLite's own C path (about half the cost of a wide row read with
    :func:`read_text`); when a value is not UTF-8 the rows are read again with
    :func:`read_text`, as every other read is.  A connection is used by one thread."""
    factory = conn.text_factory
    conn.text_factory = str
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if not str(exc).startswith("Could not decode to UTF-8"):
            raise
    finally:
        conn.text_factory = factory
    return conn.execute(sql, params).fetchall()
