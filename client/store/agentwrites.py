"""Whether what an agent stores is shared with the team at once, or held for review.

An agent's ``remember`` (MCP) is by default held: stored private, like a hook's
capture, until a person accepts it (``sealmem captured accept``, the viewer's
captured page), which shares it still marked ``agent`` (its record's ``source``).
A person may choose ``share``: agent writes are then shared at once, still marked.
The choice is this store's (the ``meta`` key :data:`META_KEY`), set with
``sealmem captured agent-writes share|review``.

An agent's ``forget`` of a memory shared with the team is held the same way (while
the choice is ``review``): nothing is erased or published; the request waits in the
``held_forgets`` table until a person accepts it (the forget is then done, as the
person's) or discards it (the memory stays).  A private memory, which no teammate
holds, is forgotten at once; a person's ``sealmem forget`` is always immediate.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from typing import Literal

from ...protocol.errors import InputError
from .connection import get_meta, set_meta, transaction
from .redact import redact_reason

__all__ = [
    "DEFAULT",
    "META_KEY",
    "POLICIES",
    "HeldForget",
    "Policy",
    "drop_forget",
    "held",
    "held_forgets",
    "hold_forget",
    "policy",
    "set_policy",
]

Policy = Literal["review", "share"]
POLICIES: tuple[Policy, ...] = ("review", "share")
DEFAULT: Policy = "review"
META_KEY = "agent_writes"


def policy(conn: sqlite3.Connection) -> Policy:
    """This store's choice; :data:`DEFAULT` when none was made (or an unknown one is kept)."""
    value = get_meta(conn, META_KEY)
    return next((p for p in POLICIES if p == value), DEFAULT)


def held(conn: sqlite3.Connection) -> bool:
    """Whether an agent's new memory is stored private until a person accepts it."""
    return policy(conn) == "review"


def set_policy(conn: sqlite3.Connection, value: str) -> Policy:
    """Record ``value`` (``review`` or ``share``); refused by name otherwise."""
    chosen = next((p for p in POLICIES if p == value), None)
    if chosen is None:
        raise InputError(
            f"agent writes {value!r} is not a choice: give 'review' (an agent's memories "
            "stay private until you accept them) or 'share' (shared at once, marked agent)"
        )
    with transaction(conn):
        set_meta(conn, META_KEY, chosen)
    return chosen


@dataclass(frozen=True)
class HeldForget:
    """An agent's request to forget a shared memory, waiting for a person."""

    id: str
    reason: str
    origin: str
    """The agent's session (the MCP origin) that asked."""
    asked_at: int
    digest: str = ""
    """The version the agent saw (:func:`.trust_rows.version_key`'s digest): a person's
    accept forgets that version only, not one written since."""


def hold_forget(conn: sqlite3.Connection, request: HeldForget) -> HeldForget:
    """Keep ``request`` for a person (a repeat replaces the earlier reason), its reason
    redacted as a tombstone's is; returns what is kept."""
    kept = replace(request, reason=redact_reason(request.reason))
    with transaction(conn):
        conn.execute(
            "INSERT OR REPLACE INTO held_forgets (id, reason, origin, asked_at, digest) "
            "VALUES (?, ?, ?, ?, ?)",
            (kept.id, kept.reason, kept.origin, kept.asked_at, kept.digest),
        )
    return kept


def held_forgets(conn: sqlite3.Connection) -> dict[str, HeldForget]:
    """``{memory id: request}`` of every forget waiting, oldest first."""
    rows = conn.execute(
        "SELECT id, reason, origin, asked_at, digest FROM held_forgets ORDER BY asked_at, id"
    )
    return {
        str(r[0]): HeldForget(str(r[0]), str(r[1]), str(r[2]), int(r[3]), str(r[4])) for r in rows
    }


def drop_forget(conn: sqlite3.Connection, memory_id: str) -> None:
    """Forget the request about ``memory_id`` (done, or discarded by a person)."""
    with transaction(conn):
        conn.execute("DELETE FROM held_forgets WHERE id = ?", (memory_id,))
