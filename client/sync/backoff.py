"""Exponential backoff with full jitter, for retrying a sync that failed.

After the n-th failure in a row, wait a random time in ``[0, min(max_s, start_s *
2**(n-1))]`` ("full jitter", as in the AWS Architecture Blog's *Exponential
Backoff And Jitter*): members whose hub went down together do not come back in
step, and an unreachable folder costs a few attempts an hour, not ten a second.
The randomness is passed in, so a test can pin it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...protocol.errors import InputError

__all__ = ["BACKOFF_MAX_S", "BACKOFF_START_S", "Backoff"]

BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 300.0


@dataclass(frozen=True)
class Backoff:
    """How long to wait after failures; ``delay`` never exceeds ``ceiling``."""

    start_s: float = BACKOFF_START_S
    max_s: float = BACKOFF_MAX_S

    def __post_init__(self) -> None:
        if not 0 < self.start_s <= self.max_s:
            raise InputError(
                f"backoff start {self.start_s} s and maximum {self.max_s} s: need "
                "0 < start <= maximum; pass a positive --max-backoff of at least 1"
            )

    def ceiling(self, failures: int) -> float:
        """The longest wait after ``failures`` (>= 1) failed attempts in a row."""
        doublings = min(max(failures, 1) - 1, 64)  # 2**64 s is past any maximum
        return float(min(self.max_s, self.start_s * 2.0**doublings))

    def delay(self, failures: int, rand: Callable[[], float]) -> float:
        """A wait in ``[0, ceiling(failures)]``; ``rand`` returns a number in ``[0, 1]``."""
        return self.ceiling(failures) * min(max(rand(), 0.0), 1.0)
