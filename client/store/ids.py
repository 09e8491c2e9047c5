"""Memory ids typed by a person or an agent: one resolver for every command and tool.

An id is accepted as the full UUIDv7, or as a fragment of at least
:data:`MIN_FRAGMENT` hex digits that starts or ends the id (dashes ignored),
provided exactly one memory matches.  The short form the CLI prints is the last 12
digits (:func:`sealmem.client.cli.output.short_id`); they are random, so they are
the fragment to prefer: a UUIDv7 starts with its timestamp, and memories written in
the same minute share their first 8 digits.
"""

from __future__ import annotations

import re
import sqlite3

from ...protocol.errors import InputError, NotFoundError
from ...protocol.record import is_memory_id

__all__ = ["MAX_LISTED", "MIN_FRAGMENT", "resolve", "short_id"]


def short_id(memory_id: str) -> str:
    """The last 12 hex digits, the fragment to prefer (see the module docstring)."""
    return memory_id[-12:]


MIN_FRAGMENT = 8
MAX_LISTED = 5

_HEX = re.compile(r"^[0-9a-f]+$")


def resolve(conn: sqlite3.Connection, text: object, *, where: str = "the store") -> str:
    """The full id of the one memory ``text`` names: :class:`NotFoundError` for none,
    :class:`InputError` for several (listed, with how to pick one) or not an id."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("a memory id is required; 'sealmem list' shows ids")
    given = text.strip().lower()
    if is_memory_id(given):
        found = conn.execute("SELECT id FROM memories WHERE id = ?", (given,)).fetchone()
        if found is None:
            raise NotFoundError(f"no memory {given} in {where}; 'sealmem list' shows ids")
        return given
    digits = given.replace("-", "")
    if not _HEX.match(digits) or len(digits) > 32:
        raise InputError(
            f"{text.strip()!r} is not a memory id: give the full id ('sealmem list' shows "
            "them), or its last 12 hex digits"
        )
    if len(digits) < MIN_FRAGMENT:
        raise InputError(
            f"id {text.strip()!r} is too short: give at least {MIN_FRAGMENT} hex digits "
            "that start or end it (the last 12 are unique), or the full id"
        )
    rows = conn.execute(
        "SELECT id, kind FROM memories WHERE substr(replace(id, '-', ''), 1, ?1) = ?2 "
        "OR substr(replace(id, '-', ''), -?1) = ?2 ORDER BY id LIMIT ?3",
        (len(digits), digits, MAX_LISTED + 1),
    ).fetchall()
    if not rows:
        raise NotFoundError(
            f"no memory id starts or ends with {given!r} in {where}; 'sealmem list' shows ids"
        )
    if len(rows) > 1:
        listed = ", ".join(f"{r[0]} ({r[1]})" for r in rows[:MAX_LISTED])
        more = " and more" if len(rows) > MAX_LISTED else ""
        raise InputError(
            f"id {given!r} matches several memories: {listed}{more}; give the full id, or "
            "its last 12 hex digits (memories written in the same minute share their first "
            "8: a UUIDv7 starts with its timestamp)"
        )
    return str(rows[0][0])
