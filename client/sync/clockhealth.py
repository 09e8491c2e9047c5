"""Clock health: this machine's clock against the team's transport and teammates' clocks.

A transport reports the newest time its own clock told
(:meth:`~sealmem.client.sync.transport.Transport.reference_time`: the hub's
``Sealmem-Hub-Time`` answer header, or the mtime the folder's file server gave a
file this member just wrote).  Neither is trusted: a hub can add three days to its
header.  So the skew against it is weighed against the teammates' **signed** clocks
verified in the same sync: the ``created_at`` each teammate signed into the manifests
this sync accepted (``chain_heads`` rows accepted since the sync began), as the skew of
ours against each.  :func:`judge` (pure) decides:

- within :data:`WARN_SKEW_MS` of the transport: fine (:data:`OK`);
- more teammates' signed clocks agree with the transport than with ours: **our** clock
  is off (:data:`YOURS`): one warning line with the fix;
- a teammate's signed clock agrees with ours: the transport's clock is wrong, or the
  transport lies about it (:data:`TRANSPORT`): said as such, nothing to fix here;
- no fresh signed clock agrees with either: the clocks disagree and nobody can tell
  which is right yet (:data:`UNCONFIRMED`): check this clock against another source.

The member is told its clock is wrong only in the second case.  A sync that accepted no
manifest keeps the teammates' word of the last measurement while the transport's skew
stays where it was (:func:`carried`).  The measurement is kept in the store's ``meta``
table (key ``clock_skew``; a sync that measured nothing keeps the last one) for
``status``, the MCP ``status`` tool and the viewer.

What the signed clocks cannot show: a signed time is a lower bound of the time its
writer saw, and a transport chooses which (verified, so never forged) manifests we see;
a manifest left unpulled for days looks like a teammate days behind.  So agreement
counts only within :data:`WARN_SKEW_MS`, and a hub that replays nothing new gets no
teammate to agree with it.

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
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from ...protocol.hlc import MAX_AHEAD_MS, MAX_WALL_MS
from ..store.connection import get_meta, set_meta, transaction
from .transport import Transport

__all__ = [
    "EARLIEST_MS",
    "META_KEY",
    "OK",
    "TRANSPORT",
    "UNCONFIRMED",
    "WARNING_PREFIXES",
    "WARN_SKEW_MS",
    "YOURS",
    "Skew",
    "carried",
    "judge",
    "load",
    "measure",
    "note",
    "signed_skews",
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

OK = "ok"  # within WARN_SKEW_MS of the transport
YOURS = "yours"  # teammates' signed clocks agree with the transport: ours is off
TRANSPORT = "transport"  # teammates' signed clocks agree with ours: the transport's is off
UNCONFIRMED = "unconfirmed"  # no fresh signed clock agrees with either

_FIX = "fix the system clock (timedatectl / NTP)"
#: How every clock warning begins (``sync --watch`` says it again only when it changes).
WARNING_PREFIXES = ("your clock is ", "the clocks disagree: ")


def judge(skew_ms: int, teammates: Sequence[int], warn_ms: int = WARN_SKEW_MS) -> str:
    """Whose clock is off, from our skew against the transport (``skew_ms``: ours minus
    theirs) and against each teammate's freshly signed clock (``teammates``, the same
    way round): :data:`OK`, :data:`YOURS`, :data:`TRANSPORT` or :data:`UNCONFIRMED`.

    >>> judge(3 * 86_400_000, [3 * 86_400_000 - 20_000])  # a teammate agrees with the hub
    'yours'
    >>> judge(-3 * 86_400_000, [20_000])  # the hub alone says we are 3 days behind
    'transport'
    """
    if abs(skew_ms) <= warn_ms:
        return OK
    with_transport = sum(1 for t in teammates if abs(t - skew_ms) <= warn_ms)
    with_us = sum(1 for t in teammates if abs(t) <= warn_ms)
    if with_transport > with_us:
        return YOURS
    return TRANSPORT if with_us else UNCONFIRMED


def span(ms: int) -> str:
    """``1 day``, ``3 days``, ``5 h``, ``12 min``, ``40 s``: rounded, in the largest unit
    it nearly fills (23 h 59 min is ``1 day``)."""
    seconds = round(abs(ms) / 1000)
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size * 0.95:
            n = round(seconds / size)
            return f"{n} {unit}{'s' if unit == 'day' and n != 1 else ''}"
    return f"{seconds} s"


def _teammates(n: int) -> str:
    if n == 1:
        return "1 teammate's freshly signed clock"
    return f"{n} teammates' freshly signed clocks"


@dataclass(frozen=True)
class Skew:
    """Our clock minus the transport's, in ms (positive: ours is ahead), when measured, and
    our clock minus each teammate's clock signed in the manifests that sync accepted."""

    skew_ms: int
    source: str  # "hub" or "folder"
    location: str
    measured_at: int
    teammates: tuple[int, ...] = ()

    @property
    def verdict(self) -> str:
        return judge(self.skew_ms, self.teammates)

    @property
    def ok(self) -> bool:
        return self.verdict == OK

    def what(self) -> str:
        where = "the hub" if self.source == "hub" else "the shared folder"
        return f"{where} at {self.location}"

    def warning(self) -> str | None:
        """The one line a sync prints when a clock is off (whose, as :func:`judge` says,
        with the fix); None when fine."""
        verdict = self.verdict
        if verdict == OK:
            return None
        gap = span(self.skew_ms)
        if verdict == YOURS:
            agree = sum(1 for t in self.teammates if abs(t - self.skew_ms) <= WARN_SKEW_MS)
            way = "ahead of" if self.skew_ms > 0 else "behind"
            line = f"{WARNING_PREFIXES[0]}{gap} {way} {self.what()} and {_teammates(agree)}: {_FIX}"
            if self.skew_ms > 0:
                line += "; until then your edits win over teammates' later ones" + (
                    ", and teammates refuse them as dated in the future (clock-ahead)"
                    if self.skew_ms > MAX_AHEAD_MS
                    else ""
                )
            return line
        way = "behind" if self.skew_ms > 0 else "ahead of"
        said = f"{WARNING_PREFIXES[1]}{self.what()} is {gap} {way} this machine's clock"
        if verdict == TRANSPORT:
            agree = sum(1 for t in self.teammates if abs(t) <= WARN_SKEW_MS)
            return (
                f"{said}, which agrees with {_teammates(agree)}: the {self.source}'s clock is "
                "wrong, or it lies about it; nothing to fix on this machine (tell whoever "
                f"runs the {self.source})"
            )
        return (
            f"{said}, and no teammate's freshly signed clock tells which is right yet: check "
            "this machine's clock against another source (timedatectl / NTP); if it is "
            f"right, tell whoever runs the {self.source}"
        )

    def status_line(self, when: str) -> str:
        """``status``'s one line on the clock, as the last sync that measured it saw."""
        where = "hub" if self.source == "hub" else "shared folder"
        verdict = self.verdict
        if verdict == OK:
            return f"clock: within {span(WARN_SKEW_MS)} of the {where} (measured {when})"
        if verdict == YOURS:
            way = "ahead of" if self.skew_ms > 0 else "behind"
            return f"clock: {span(self.skew_ms)} {way} the {where}, measured {when} (see ALARM)"
        way = "behind" if self.skew_ms > 0 else "ahead of"
        whose = "teammates agree with this machine" if verdict == TRANSPORT else "unconfirmed"
        return (
            f"clock: the {where} is {span(self.skew_ms)} {way} this machine ({whose}), "
            f"measured {when} (see ALARM)"
        )

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["teammates"] = list(self.teammates)
        return {**doc, "verdict": self.verdict, "ok": self.ok, "warning": self.warning()}


def signed_skews(conn: sqlite3.Connection, now_ms: int, since: int) -> tuple[int, ...]:
    """Our clock minus each teammate's newest signed ``created_at`` among the manifests
    accepted at or after ``since`` (this sync's pull), one per teammate, plausible only."""
    rows = conn.execute(
        "SELECT writer, MAX(created_at) FROM chain_heads WHERE accepted_at >= ? GROUP BY writer",
        (since,),
    ).fetchall()
    return tuple(sorted(now_ms - int(t) for _, t in rows if EARLIEST_MS <= int(t) <= MAX_WALL_MS))


def measure(transport: Transport, now_ms: int, teammates: Sequence[int] = ()) -> Skew | None:
    """The skew from the transport's newest reading (None: it gave none this sync)."""
    seen = transport.reference_time()
    if seen is None:
        return None
    theirs, seen_at = seen
    if not EARLIEST_MS <= theirs <= MAX_WALL_MS:
        return None
    elapsed_ms = int((time.monotonic() - seen_at) * 1000)
    return Skew(
        now_ms - (theirs + elapsed_ms),
        transport.kind,
        transport.location,
        now_ms,
        tuple(teammates),
    )


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
            tuple(int(t) for t in doc.get("teammates", ())),
        )
    except (ValueError, KeyError, TypeError):
        return None


def carried(skew: Skew, last: Skew | None) -> Skew:
    """``skew`` with the teammates' clocks of ``last`` when this sync accepted none and the
    transport's skew has not moved since (by :data:`WARN_SKEW_MS` at most): what teammates
    told of the same gap still holds; a gap that moved needs new word from them."""
    if skew.teammates or last is None or not last.teammates:
        return skew
    same = (last.source, last.location) == (skew.source, skew.location)
    if not same or abs(last.skew_ms - skew.skew_ms) > WARN_SKEW_MS:
        return skew
    return replace(skew, teammates=last.teammates)


def note(conn: sqlite3.Connection, transport: Transport, now_ms: int, since: int) -> str | None:
    """At the end of a sync that began at ``since``: keep this sync's measurement, weighed
    against the teammates' clocks signed in what it accepted (or, when it accepted none,
    in what an earlier sync accepted: :func:`carried`); the warning line, if any."""
    skew = measure(transport, now_ms, signed_skews(conn, now_ms, since))
    if skew is None:
        return None
    skew = carried(skew, load(conn))
    with transaction(conn):
        set_meta(conn, META_KEY, json.dumps(skew.to_dict(), sort_keys=True))
    return skew.warning()
