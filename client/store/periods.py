"""The two periods a reader applies, and where each comes from (SPEC "Team settings").

``review``: how many days a member approved after the reader stays in ``review``;
``stale``: after how many days without a confirmation a memory is stale.  Each is the
person's own setting on this machine when there is one (``meta`` keys
``trust_review_days`` and ``stale_after_days``), else the team's value from the newest
roster this store accepted (admin-signed, chain-verified before it was saved), else
the default of :data:`sealmem.protocol.settings.DEFAULTS`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from ...protocol.errors import InputError, ProtocolError
from ...protocol.settings import BOUNDS, NO_SETTINGS, TeamSettings
from .connection import get_meta, set_meta, transaction

__all__ = [
    "DEFAULT",
    "LOCAL",
    "REVIEW",
    "STALE",
    "TEAM",
    "Period",
    "clear_local",
    "period",
    "set_local",
    "team_settings",
]

REVIEW, STALE = "review_days", "stale_days"
LOCAL, TEAM, DEFAULT = "local", "team", "default"
_KEYS = {REVIEW: "trust_review_days", STALE: "stale_after_days"}
_WHAT = {REVIEW: "trust review period", STALE: "review period"}  # as the CLI names them


@dataclass(frozen=True)
class Period:
    """One period as this reader applies it: ``days``, and ``source`` (``local``, ``team``
    or ``default``); ``team_days`` is the team's value whatever applies (None: unset)."""

    name: str
    days: int
    source: str
    team_days: int | None = None

    def to_dict(self) -> dict[str, object]:
        return {"days": self.days, "set_by": self.source, "team_days": self.team_days}

    def words(self) -> str:
        """ "7 days (team setting)", "3 days (your setting here; the team's is 7)"."""
        if self.source == LOCAL:
            team = "" if self.team_days is None else f"; the team's is {self.team_days}"
            return f"{self.days} days (your setting on this machine{team})"
        return f"{self.days} days ({'the team setting' if self.source == TEAM else 'default'})"


def team_settings(conn: sqlite3.Connection) -> TeamSettings:
    """The periods of the newest accepted roster; none without a team, or when it sets none.
    SQLite reads the one field out of the stored envelope (recall asks on every call, and a
    large team's roster is large)."""
    try:
        row = conn.execute(
            "SELECT json_extract(CAST(data AS TEXT), '$.body.settings') FROM team_objects "
            "WHERE kind = 'roster' ORDER BY name DESC LIMIT 1"
        ).fetchone()
    except sqlite3.DatabaseError:  # not JSON: verified before it was saved, so damage
        return NO_SETTINGS
    if row is None or row[0] is None:
        return NO_SETTINGS
    try:
        return TeamSettings.from_wire(json.loads(str(row[0])))
    except (ProtocolError, ValueError):
        return NO_SETTINGS


def _local(conn: sqlite3.Connection, name: str) -> int | None:
    value = get_meta(conn, _KEYS[name])
    if value is None or not value.isdigit():
        return None
    low, high = BOUNDS[name]
    return int(value) if low <= int(value) <= high else None


def period(conn: sqlite3.Connection, name: str) -> Period:
    """Period ``name`` (:data:`REVIEW` or :data:`STALE`): local, else team, else default."""
    settings = team_settings(conn)
    team = settings.values().get(name)
    if (mine := _local(conn, name)) is not None:
        return Period(name, mine, LOCAL, team)
    return Period(name, settings.effective(name), DEFAULT if team is None else TEAM, team)


def set_local(conn: sqlite3.Connection, name: str, days: int) -> Period:
    """This person's own period ``name`` on this machine (it wins over the team's)."""
    low, high = BOUNDS[name]
    if isinstance(days, bool) or not isinstance(days, int) or not low <= days <= high:
        raise InputError(f"{_WHAT[name]} {days!r} is not a number of days from {low} to {high}")
    with transaction(conn):
        set_meta(conn, _KEYS[name], str(days))
    return period(conn, name)


def clear_local(conn: sqlite3.Connection, name: str) -> Period:
    """Drop this person's own period ``name``: the team's (or the default) applies again."""
    with transaction(conn):
        conn.execute("DELETE FROM meta WHERE key = ?", (_KEYS[name],))
    return period(conn, name)
