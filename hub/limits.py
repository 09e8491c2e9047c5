"""Limits, each answered with a clear JSON error: request rate (429), team storage
quota (507).  Body sizes and read rates are the edge's (:mod:`sealmem.hub.edge`)."""

from __future__ import annotations

import math
import threading

from ..protocol import hubapi
from .errors import Refusal
from .storage import Storage

__all__ = ["RateLimiter", "check_quota"]

_MAX_BUCKETS = 100_000


class RateLimiter:
    """Token buckets per key: ``rate`` tokens per second, at most ``burst`` saved up."""

    def __init__(self, rate: float, burst: int, what: str) -> None:
        self.rate = rate
        self.burst = burst
        self._what = what
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, now_s: float) -> None:
        """Spend one token of ``key``; raise 429 with a retry delay when none is left."""
        with self._lock:
            if len(self._buckets) > _MAX_BUCKETS:
                full = [
                    k
                    for k, (t, at) in self._buckets.items()
                    if t + (now_s - at) * self.rate >= self.burst
                ]
                for k in full:
                    del self._buckets[k]
            tokens, at = self._buckets.get(key, (float(self.burst), now_s))
            tokens = min(float(self.burst), tokens + (now_s - at) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now_s)
                wait = math.ceil((1.0 - tokens) / self.rate)
                raise Refusal(
                    429,
                    hubapi.RATE_LIMITED,
                    f"too many requests from {self._what} {key[:26]}; retry in {wait} s",
                    retry_after=wait,
                )
            self._buckets[key] = (tokens - 1.0, now_s)


def check_quota(storage: Storage, team: str, incoming: int, quota: int) -> None:
    used = storage.usage(team)
    if used + incoming > quota:
        raise Refusal(
            507,
            hubapi.QUOTA_EXCEEDED,
            f"team {team} holds {used} bytes on this hub; storing {incoming} more would pass "
            f"its quota of {quota}: ask the hub operator for more, or collect old chunks",
        )
