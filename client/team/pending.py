"""The team id of a ``team create`` that has not succeeded yet: ``team-pending.json``.

A hub registers a team only when its operator allows it (a token, or its id on an
allow-list).  The id is drawn at random once; a create that fails (the hub refused the
id, the folder was unreachable) keeps it here, so the operator can allow the id the
refusal named and the next ``team create`` of the same name registers that same id.
It is removed once the team exists.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from ...protocol.roster import TEAM_RE
from ..fsutil import atomic_write
from ..project import sanitize_project

__all__ = ["PENDING_FILE", "clear_pending", "pending_team_id"]

PENDING_FILE = "team-pending.json"
_FORMAT = "sealmem/team-pending/v1"


def _minted(name: str) -> str:
    slug = sanitize_project(name).replace(".", "-").replace("_", "-")[:50].strip("-")
    team_id = f"{slug or 'team'}-{secrets.token_hex(4)}"
    return team_id if len(team_id) >= 12 else f"team-{team_id}"


def pending_team_id(home: Path, name: str) -> str:
    """The id a failed create of ``name`` drew, else a new one (kept until it succeeds)."""
    path = Path(home) / PENDING_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or unreadable: a new id
        doc = None
    if (
        isinstance(doc, dict)
        and doc.get("format") == _FORMAT
        and doc.get("name") == name
        and isinstance(doc.get("team"), str)
        and TEAM_RE.match(doc["team"])
    ):
        return str(doc["team"])
    team_id = _minted(name)
    body = {"format": _FORMAT, "name": name, "team": team_id}
    atomic_write(path, json.dumps(body).encode("utf-8"))
    return team_id


def clear_pending(home: Path) -> None:
    (Path(home) / PENDING_FILE).unlink(missing_ok=True)
