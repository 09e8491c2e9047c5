"""What an admin must know about the team's door, from what the hub says of it.

The hub answers the admins' read of the join requests with a ``door`` summary (a full
inbox, refused join posts); :func:`door_warnings` turns it into sentences.  The hub is
not trusted with the admin's terminal: only what is shaped like the hub's own answers
is named.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["door_warnings"]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_DOOR_CODE = re.compile(r"[a-z][a-z0-9-]{0,40}")
_MAX_DOOR_CODES = 16


def door_warnings(door: Mapping[str, Any], now: int) -> list[str]:
    """What an admin must know about the team's door: a full inbox, refused join posts.

    The hub is not trusted with the admin's terminal: only refusal codes shaped like
    the hub's own (``^[a-z][a-z0-9-]{0,40}$``) with a sane count are named, the 16
    most frequent at most."""
    out: list[str] = []
    pending, capacity = _int(door.get("pending")), _int(door.get("capacity"))
    expires, oldest = _int(door.get("expires_after_ms")), _int(door.get("oldest_posted_at"))
    fix = "approve or reject them ('sealmem admin approve KID' / 'sealmem admin reject KID')"
    if pending is not None and capacity and pending * 4 >= capacity * 3:
        age = "" if oldest is None else f", the oldest posted {_ago(now - oldest)} ago"
        ttl = "" if expires is None else f"; unhandled ones expire after {_ago(expires)}"
        out.append(
            f"the hub's join inbox for this team holds {pending} of {capacity} requests"
            f"{age}{ttl}: {fix}, or new join requests are refused"
        )
    refused = door.get("refused")
    if isinstance(refused, dict) and isinstance(by_code := refused.get("by_code"), dict):
        valid = [
            (n, k)
            for k, v in by_code.items()
            if isinstance(k, str) and _DOOR_CODE.fullmatch(k)
            if (n := _int(v)) is not None and 0 < n < 10**12
        ]
        counts = dict(
            sorted((k, n) for n, k in sorted(valid, key=lambda x: (-x[0], x[1]))[:_MAX_DOOR_CODES])
        )
        if counts:
            total = sum(counts.values())
            since = _int(door.get("counted_since"))
            last = _int(refused.get("last_at"))
            when = "" if since is None else f" in the last {_ago(now - since)}"
            latest = "" if last is None else f", the last {_ago(now - last)} ago"
            parts = ", ".join(f"{n} {code}" for code, n in sorted(counts.items()))
            out.append(
                f"the hub refused {total} join post(s) to this team{when} ({parts}{latest}): "
                f"a stranger may be flooding the team's door; a teammate who cannot join may "
                f"be among them: {fix}"
            )
    return out


def _ago(ms: int) -> str:
    seconds = max(0, ms) // 1000
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"
