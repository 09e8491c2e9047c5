"""Limits, each answered with a clear JSON error: request rate (429), team storage
quota (507).  Body sizes and read rates are the edge's (:mod:`sealmem.hub.http.edge`)."""

from __future__ import annotations

import math

from ..protocol import hubapi
from .errors import Refusal
from .storage import DiskFull, Storage

__all__ = ["RateLimiter", "check_quota"]


class RateLimiter:
    """Token buckets per key, kept by the storage (shared by every replica):
    ``rate`` tokens per second, at most ``burst`` saved up."""

    def __init__(self, storage: Storage, rate: float, burst: int, what: str) -> None:
        self.rate = rate
        self.burst = burst
        self._storage = storage
        self._what = what

    def take(self, key: str, now_ms: int) -> None:
        """Spend one token of ``key``; raise 429 with a retry delay when none is left.  A
        storage with no space to count it (PostgreSQL keeps buckets in rows) lets the request
        on: a write is refused by the storage anyway, and a read takes no space."""
        try:
            wait_s = self._storage.take_token(f"{self._what}:{key}", self.rate, self.burst, now_ms)
        except DiskFull:
            return
        if wait_s > 0:
            wait = max(math.ceil(wait_s), 1)
            raise Refusal(
                429,
                hubapi.RATE_LIMITED,
                f"too many requests from {self._what} {key[:26]}; retry in {wait} s",
                retry_after=wait,
            )


def check_quota(storage: Storage, team: str, incoming: int, quota: int) -> None:
    used = storage.usage(team)
    if used + incoming > quota:
        raise Refusal(
            507,
            hubapi.QUOTA_EXCEEDED,
            f"team {team} holds {used} bytes on this hub; storing {incoming} more would pass "
            f"its quota of {quota}: ask the hub operator for more, or collect old chunks",
        )
