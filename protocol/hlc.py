"""Hybrid logical clock (Kulkarni et al.), as pure functions over values.

A timestamp is ``(wall, counter)``: ``wall`` is milliseconds since the Unix
epoch, ``counter`` breaks ties within one millisecond.  Timestamps compare as
tuples.  The caller passes the physical clock reading ``now_ms`` explicitly, so
these functions are deterministic and testable.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ZERO", "Hlc", "receive", "tick"]


class Hlc(NamedTuple):
    wall: int
    counter: int

    def to_wire(self) -> list[int]:
        return [self.wall, self.counter]

    @classmethod
    def from_wire(cls, value: object) -> Hlc:
        from .errors import ProtocolError

        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            or value[0] < 0
            or value[1] < 0
        ):
            raise ProtocolError(
                f"hlc must be [wall_ms, counter] of two non-negative ints: {value!r}"
            )
        return cls(value[0], value[1])


ZERO = Hlc(0, 0)


def tick(last: Hlc, now_ms: int) -> Hlc:
    """The timestamp for a local event (a write), after ``last``."""
    if now_ms > last.wall:
        return Hlc(now_ms, 0)
    return Hlc(last.wall, last.counter + 1)


def receive(last: Hlc, remote: Hlc, now_ms: int) -> Hlc:
    """The local clock after seeing ``remote``: never behind either, never repeating."""
    wall = max(last.wall, remote.wall, now_ms)
    if wall == last.wall and wall == remote.wall:
        counter = max(last.counter, remote.counter) + 1
    elif wall == last.wall:
        counter = last.counter + 1
    elif wall == remote.wall:
        counter = remote.counter + 1
    else:
        counter = 0
    return Hlc(wall, counter)
