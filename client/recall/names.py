"""Member names for display: who a kid is, from the newest roster this store accepted.

Rosters are verified before they are saved (``client/sync/session.py``), so reading the
newest one back needs no signature check; a store that never joined a team has
no names and every author shows as its short id.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict

from ...protocol import canonical
from ...protocol.devices import key_owners
from ...protocol.errors import ProtocolError

__all__ = ["author_names", "member_ids", "member_names", "newest_roster_data", "people"]


def newest_roster_data(conn: sqlite3.Connection) -> bytes | None:
    """The envelope of the newest roster this store accepted; None without a team."""
    row = conn.execute(
        "SELECT data FROM team_objects WHERE kind = 'roster' ORDER BY name DESC LIMIT 1"
    ).fetchone()
    return None if row is None else bytes(row[0])


def _owners(conn: sqlite3.Connection) -> dict[str, tuple[str, str, str]]:
    data = newest_roster_data(conn)
    if data is None:
        return {}
    try:
        return key_owners(canonical.decode(data)["body"]["members"])
    except (ProtocolError, KeyError, TypeError):
        return {}


def member_names(conn: sqlite3.Connection) -> dict[str, str]:
    """``{kid: name}`` of every key in the newest accepted roster (empty without a
    team); a device of a member with several shows as "alice (laptop)": provenance
    names the device (SPEC "What a reader does with devices")."""
    return {kid: shown for kid, (_, _, shown) in _owners(conn).items()}


def member_ids(conn: sqlite3.Connection) -> dict[str, str]:
    """``{kid: member id}`` of every key in the newest accepted roster: a device's
    writes count as its member's (SPEC "What a reader does with devices")."""
    return {kid: mid for kid, (mid, _, _) in _owners(conn).items()}


def people(conn: sqlite3.Connection) -> dict[str, str]:
    """``{member id: member name}`` of the newest accepted roster: whom a person names."""
    return {mid: name for mid, name, _ in _owners(conn).values()}


_SLOTS = 8
_NAMES: OrderedDict[int, tuple[sqlite3.Connection, tuple[int, int], dict[str, tuple[str, ...]]]] = (
    OrderedDict()
)


def author_names(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """``{kid: (kid, its member's name)}`` of every key of the newest accepted roster (empty
    without a team); cached per connection until the database changes (``PRAGMA data_version``
    moves when another connection commits, ``total_changes`` when this one writes)."""
    version = (int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes)
    cached = _NAMES.get(id(conn))
    if cached is not None and cached[0] is conn and cached[1] == version:
        _NAMES.move_to_end(id(conn))
        return cached[2]
    # every key's member name: a device's author is its member
    names: dict[str, tuple[str, ...]] = {
        kid: (kid, name) for kid, (_, name, _) in _owners(conn).items()
    }
    _NAMES[id(conn)] = (conn, version, names)
    while len(_NAMES) > _SLOTS:
        _NAMES.popitem(last=False)
    return names
