"""Whether what an agent stores is shared with the team at once, or held for review.

An agent's ``remember`` (MCP) is by default held: stored private, like a hook's
capture, until a person accepts it (``sealmem captured accept``, the viewer's
captured page), which shares it still marked ``agent`` (its record's ``source``).
A person may choose ``share``: agent writes are then shared at once, still marked.
The choice is this store's (the ``meta`` key :data:`META_KEY`), set with
``sealmem captured agent-writes share|review``.
"""

from __future__ import annotations

import sqlite3
from typing import Literal

from ...protocol.errors import InputError
from .connection import get_meta, set_meta, transaction

__all__ = ["DEFAULT", "META_KEY", "POLICIES", "Policy", "held", "policy", "set_policy"]

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
