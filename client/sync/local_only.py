"""Which of this member's team memories stay on its machine, why, and how to fix it.

A team memory leaves the machine only in a project the member may write
(:func:`~sealmem.protocol.push.why_local`, the rule the push follows).  The
others stay local, silently as far as the push goes; this module counts them
per project and words the reason and the fix for ``remember``, ``sync`` and
``team status``.  Private memories are never counted: they never leave by design.

:func:`stays_local` is the cheap check ``remember`` runs: a store that is not in a
team pays one indexed read; a team store reads its newest accepted roster back
from the store (never the transport) and counts one project.
"""

from __future__ import annotations

import re
import shlex
import sqlite3
from dataclasses import dataclass
from typing import Any

from ...protocol.envelope import unpack
from ...protocol.errors import SealmemError
from ...protocol.push import (
    LOCAL_NO_GRANT,
    LOCAL_NOT_MEMBER,
    LOCAL_READ_ONLY,
    LOCAL_REVOKED,
    LOCAL_UNREGISTERED,
    why_local,
)
from ...protocol.roster import Roster
from ...protocol.verify import MAX_ROSTER_BYTES
from ..recall.names import newest_roster_data
from . import replica

__all__ = ["LocalOnly", "local_only", "newest_roster", "stays_local"]

_PLAIN = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class LocalOnly:
    """The team memories of one project that stay on this machine, and why."""

    project: str
    count: int  # live team memories whose winning version this member wrote
    reason: str  # one of protocol.push.LOCAL_REASONS
    who: str  # how an admin names this member on the command line

    @property
    def why(self) -> str:
        return {
            LOCAL_NOT_MEMBER: "your join request is not approved yet",
            LOCAL_REVOKED: "your membership was revoked",
            LOCAL_UNREGISTERED: f"project {self.project!r} is not registered in the team",
            LOCAL_READ_ONLY: f"you may read {self.project!r} but not write it",
            LOCAL_NO_GRANT: f"you hold no grant for {self.project!r}",
        }.get(self.reason, self.reason)

    @property
    def fix(self) -> str:
        grant = f"sealmem admin grant {self.who} {shlex.quote(self.project)} --write"
        if self.reason == LOCAL_NOT_MEMBER:
            return f"ask an admin to run 'sealmem admin approve {self.who}', then sync"
        if self.reason == LOCAL_REVOKED:
            return "ask an admin: teammates refuse what a revoked member writes"
        if self.reason == LOCAL_UNREGISTERED:
            return (
                f"ask an admin to register it: '{grant} --create' (or keep such memories --private)"
            )
        return f"ask an admin for '{grant}'"

    def message(self) -> str:
        """One line: how many stay local in which project, why, and the fix."""
        what = "team memory stays" if self.count == 1 else "team memories stay"
        return f"{self.count} {what} in {self.project!r} on this machine: {self.why}; {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "count": self.count,
            "reason": self.reason,
            "why": self.why,
            "fix": self.fix,
            "message": self.message(),
        }


def _who(roster: Roster | None, me: str) -> str:
    """``me`` as an admin types it: its roster name when plain and unique, else its id."""
    if roster is None:
        return me
    member = roster.member(me)
    if member is None or not _PLAIN.fullmatch(member.name):
        return me
    same = [m for m in roster.members if m.name == member.name]
    return member.name if len(same) == 1 else me


def local_only(
    conn: sqlite3.Connection, roster: Roster | None, me: str, *, project: str | None = None
) -> list[LocalOnly]:
    """Per project (only ``project`` when given), the team memories of ``me`` that stay
    on this machine under ``roster`` (the newest trusted one; None: none yet), sorted."""
    out = []
    for name, count in sorted(replica.own_team_counts(conn, me, project).items()):
        reason = why_local(roster, me, name)
        if reason is not None and count:
            out.append(LocalOnly(name, count, reason, _who(roster, me)))
    return out


def newest_roster(conn: sqlite3.Connection) -> Roster | None:
    """The newest roster this store accepted, read back without checking its signature
    again (it was verified when accepted; ``Team.trusted`` re-verifies the chain).
    None in a store that is not in a team, or whose join is not approved yet."""
    data = newest_roster_data(conn)
    if data is None:
        return None
    from ...crypto import SUITE  # only a store in a team pays for it

    env = unpack(data, what="roster", max_bytes=MAX_ROSTER_BYTES)
    return Roster.from_body(env.body, SUITE)


def stays_local(conn: sqlite3.Connection, me: str, project: str) -> LocalOnly | None:
    """Whether ``me``'s team memories in ``project`` stay on this machine (counted), or
    None when they are pushed or the store is not in a team (one indexed read).

    Reads the store only, never the transport.  A stored roster that no longer
    parses gives None: ``sync`` reports a damaged trusted state, and a memory
    already stored must not turn into a failed command here.
    """
    try:
        roster = newest_roster(conn)
    except SealmemError:
        return None
    if roster is None:
        return None
    found = local_only(conn, roster, me, project=project)
    return found[0] if found else None
