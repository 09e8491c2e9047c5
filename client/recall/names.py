"""Member names for display: who a kid is, from the newest roster this store accepted.

Rosters are verified before they are saved (``client/sync/session.py``), so reading the
newest one back needs no signature check; a store that never joined a team has
no names and every author shows as its short id.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict

from ...protocol import canonical
from ...protocol.errors import ProtocolError

__all__ = ["author_names", "member_names", "newest_roster_data"]


def newest_roster_data(conn: sqlite3.Connection) -> bytes | None:
    """The envelope of the newest roster this store accepted; None without a team."""
    row = conn.execute(
        "SELECT data FROM team_objects WHERE kind = 'roster' ORDER BY name DESC LIMIT 1"
    ).fetchone()
    return None if row is None else bytes(row[0])


def member_names(conn: sqlite3.Connection) -> dict[str, str]:
    """``{kid: name}`` of every member in the newest accepted roster (empty without a team)."""
    data = newest_roster_data(conn)
    if data is None:
        return {}
    try:
        members = canonical.decode(data)["body"]["members"]
        return {m["kid"]: m["name"] for m in members}
    except (ProtocolError, KeyError, TypeError):
        return {}


_SLOTS = 8
_NAMES: OrderedDict[int, tuple[sqlite3.Connection, tuple[int, int], dict[str, tuple[str, ...]]]] = (
    OrderedDict()
)


def author_names(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """``{member id: (member id, roster name)}`` of the newest accepted roster (empty
    without a team); cached per connection until the database changes (``PRAGMA data_version``
    moves when another connection commits, ``total_changes`` when this one writes)."""
    version = (int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
    cached = _NAMES.get(id(conn))
    if cached is not None and cached[0] is conn and cached[1] == version:
        _NAMES.move_to_end(id(conn))
        return cached[2]
    names: dict[str, tuple[str, ...]] = {
        kid: (kid, name) for kid, name in member_names(conn).items()
    }
    _NAMES[id(conn)] = (conn, version, names)
    while len(_NAMES) > _SLOTS:
        _NAMES.popitem(last=False)
    return names
