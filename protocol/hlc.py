"""Hybrid logical clock (Kulkarni et al.), as pure functions over values.

A timestamp is ``(wall, counter)``: ``wall`` is milliseconds since the Unix epoch,
``counter`` breaks ties within one millisecond; timestamps compare as tuples.  The
caller passes the clock reading ``now_ms``, so these functions are deterministic.
The bounds on clocks from outside, and :func:`tick` and :func:`receive`: SPEC.md
"Clocks".
"""

from __future__ import annotations

from typing import NamedTuple

from .errors import ProtocolError

__all__ = [
    "MAX_AHEAD_MS",
    "MAX_COUNTER",
    "MAX_WALL_MS",
    "ZERO",
    "ClockExhausted",
    "Hlc",
    "pack",
    "receive",
    "tick",
    "too_far_ahead",
    "unpack",
]

MAX_WALL_MS = (1 << 47) - 1
"""The greatest valid ``wall``: 2^47 - 1 ms, about the year 6429."""

MAX_COUNTER = (1 << 16) - 1
"""The greatest valid ``counter``; a tick past it carries into ``wall``."""

MAX_AHEAD_MS = 2 * 24 * 60 * 60 * 1000
"""How far (2 days) a received ``wall`` may be ahead of the reader's clock."""

_COUNTER_BITS = 16


class Hlc(NamedTuple):
    wall: int
    counter: int

    def to_wire(self) -> list[int]:
        return [self.wall, self.counter]

    @classmethod
    def from_wire(cls, value: object) -> Hlc:
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            or not 0 <= value[0] <= MAX_WALL_MS
            or not 0 <= value[1] <= MAX_COUNTER
        ):
            raise ProtocolError(
                f"hlc must be [wall_ms, counter] with 0 <= wall_ms <= {MAX_WALL_MS} "
                f"and 0 <= counter <= {MAX_COUNTER}: {_short(value)}"
            )
        return cls(value[0], value[1])


ZERO = Hlc(0, 0)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class ClockExhausted(ProtocolError):
    """The clock is at its greatest value: no later timestamp exists."""


def _after(wall: int, counter: int) -> Hlc:
    """``(wall, counter)``, carrying a counter past ``MAX_COUNTER`` into ``wall``."""
    if counter <= MAX_COUNTER:
        return Hlc(wall, counter)
    if wall >= MAX_WALL_MS:
        raise ClockExhausted(
            "the clock is at its greatest value (the year 6429) and cannot move on; "
            "set the system clock to the right time"
        )
    return Hlc(wall + 1, 0)


def tick(last: Hlc, now_ms: int) -> Hlc:
    """The timestamp for a local event (a write), after ``last``."""
    wall = min(now_ms, MAX_WALL_MS)
    if wall > last.wall:
        return Hlc(wall, 0)
    return _after(last.wall, last.counter + 1)


def receive(last: Hlc, remote: Hlc, now_ms: int) -> Hlc:
    """The local clock after seeing ``remote``: never behind either, never repeating."""
    wall = min(max(last.wall, remote.wall, now_ms), MAX_WALL_MS)
    if wall == last.wall and wall == remote.wall:
        counter = max(last.counter, remote.counter) + 1
    elif wall == last.wall:
        counter = last.counter + 1
    elif wall == remote.wall:
        counter = remote.counter + 1
    else:
        counter = 0
    return _after(wall, counter)


def too_far_ahead(stamp: Hlc, now_ms: int) -> bool:
    """True when ``stamp`` is more than ``MAX_AHEAD_MS`` ahead of the reader's ``now_ms``."""
    return stamp.wall - now_ms > MAX_AHEAD_MS


def pack(stamp: Hlc) -> int:
    """One integer that orders like the timestamp and fits a signed 64-bit column."""
    if not (0 <= stamp.wall <= MAX_WALL_MS and 0 <= stamp.counter <= MAX_COUNTER):
        raise ProtocolError(f"hlc {tuple(stamp)} is outside the valid range")
    return (stamp.wall << _COUNTER_BITS) | stamp.counter


def unpack(value: int) -> Hlc:
    """The timestamp :func:`pack` made."""
    wall, counter = divmod(value, 1 << _COUNTER_BITS)
    return Hlc(wall, counter)
