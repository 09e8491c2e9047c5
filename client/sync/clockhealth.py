"""Clock health: how far this machine's clock is from the team's hub or shared folder.

A transport reports the newest time its own clock told
(:meth:`~sealmem.client.sync.transport.Transport.reference_time`: the hub's
``Sealmem-Hub-Time`` answer header, or the mtime the folder's file server gave a
file this member just wrote).  At the end of each sync the skew is measured
against the sync's clock, kept in the store's ``meta`` table (key
``clock_skew``; a sync that measured nothing keeps the last measurement), and a
skew beyond :data:`WARN_SKEW_MS` is one warning line with the fix.

Why 5 minutes: teammates refuse versions dated more than
:data:`~sealmem.protocol.hlc.MAX_AHEAD_MS` (2 days) ahead of their own clock
(``clock-ahead``), and well before that a clock running ahead lets this member's
edits win over later edits of others for as long as it is ahead (the hybrid
clocks of everyone who pulls them are dragged ahead too).  So the member must
hear of a skew long before 2 days, while NTP keeps clocks within well under a
second and a request's round trip or a file server's mtime granularity adds at
most seconds: 5 minutes never fires on a healthy machine, and catches a wrong
time zone or a dead RTC battery at the first sync.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ...protocol.hlc import MAX_AHEAD_MS, MAX_WALL_MS
from ..store.connection import get_meta, set_meta, transaction
from .transport import Transport

__all__ = [
    "EARLIEST_MS",
    "META_KEY",
    "WARNING_PREFIX",
    "WARN_SKEW_MS",
    "Skew",
    "load",
    "measure",
    "note",
    "span",
]

META_KEY = "clock_skew"
#: A skew above this (either way) is reported at sync, in status and in the MCP status tool.
WARN_SKEW_MS = 5 * 60 * 1000
#: A transport's time before this (2024-01-01 UTC, before sealmem existed) or after
#: :data:`~sealmem.protocol.hlc.MAX_WALL_MS` is no clock's reading: a broken or hostile
#: hub (``0``, three million years ahead) or file server.  It is ignored, not measured:
#: the skew against it would tell the member to "fix" a clock that may be right.
EARLIEST_MS = 1_704_067_200_000

_FIX = "fix the system clock (timedatectl / NTP)"
#: How every clock warning begins (``sync --watch`` says it again only when it changes).
WARNING_PREFIX = "your clock is "


def span(ms: int) -> str:
    """``1 day``, ``3 days``, ``5 h``, ``12 min``, ``40 s``: rounded, in the largest unit
    it nearly fills (23 h 59 min is ``1 day``)."""
    seconds = round(abs(ms) / 1000)
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size * 0.95:
            n = round(seconds / size)
            return f"{n} {unit}{'s' if unit == 'day' and n != 1 else ''}"
    return f"{seconds} s"


@dataclass(frozen=True)
class Skew:
    """Our clock minus the transport's, in ms (positive: ours is ahead), and when measured."""

    skew_ms: int
    source: str  # "hub" or "folder"
    location: str
    measured_at: int

    @property
    def ok(self) -> bool:
        return abs(self.skew_ms) <= WARN_SKEW_MS

    def what(self) -> str:
        where = "the hub" if self.source == "hub" else "the shared folder"
        return f"{where} at {self.location}"

    def warning(self) -> str | None:
        """The one line a sync prints when the clock is off, with the fix; None when fine."""
        if self.ok:
            return None
        way = "ahead of" if self.skew_ms > 0 else "behind"
        line = f"{WARNING_PREFIX}{span(self.skew_ms)} {way} {self.what()}: {_FIX}"
        if self.skew_ms > 0:
            line += "; until then your edits win over teammates' later ones" + (
                ", and teammates refuse them as dated in the future (clock-ahead)"
                if self.skew_ms > MAX_AHEAD_MS
                else ""
            )
        return line

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "warning": self.warning()}


def measure(transport: Transport, now_ms: int) -> Skew | None:
    """The skew from the transport's newest reading (None: it gave none this sync)."""
    seen = transport.reference_time()
    if seen is None:
        return None
    theirs, seen_at = seen
    if not EARLIEST_MS <= theirs <= MAX_WALL_MS:
        return None
    elapsed_ms = int((time.monotonic() - seen_at) * 1000)
    return Skew(now_ms - (theirs + elapsed_ms), transport.kind, transport.location, now_ms)


def load(conn: sqlite3.Connection) -> Skew | None:
    """The last measurement kept in the store (None: never measured, or unreadable)."""
    raw = get_meta(conn, META_KEY)
    if raw is None:
        return None
    try:
        doc: Mapping[str, Any] = json.loads(raw)
        return Skew(
            int(doc["skew_ms"]),
            str(doc["source"]),
            str(doc["location"]),
            int(doc["measured_at"]),
        )
    except (ValueError, KeyError, TypeError):
        return None


def note(conn: sqlite3.Connection, transport: Transport, now_ms: int) -> str | None:
    """At the end of a sync: keep this sync's measurement; the warning line, if any."""
    skew = measure(transport, now_ms)
    if skew is None:
        return None
    with transaction(conn):
        set_meta(conn, META_KEY, json.dumps(skew.to_dict(), sort_keys=True))
    return skew.warning()
