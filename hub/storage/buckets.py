"""Token buckets held in this process, for a backend one process serves alone.

The SQLite hub (one process per data directory, under ``hub.lock``) keeps its
rate-limit buckets here; a backend shared by replicas keeps them in its engine
(:meth:`sealmem.hub.storage.Storage.take_token`).  Bounded: past
``max_buckets`` keys, buckets that have refilled (equal to a fresh one) are
dropped, and if that is not enough the oldest go.
"""

from __future__ import annotations

import math
import threading

__all__ = ["TokenBuckets"]


class TokenBuckets:
    def __init__(self, max_buckets: int = 100_000) -> None:
        self._max = max_buckets
        self._buckets: dict[str, tuple[float, int]] = {}  # key -> (tokens, at ms)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str, rate_per_s: float, burst: int, now_ms: int) -> float:
        """0.0 when a token was spent, else the seconds until one is there."""
        with self._lock:
            tokens, at = self._buckets.get(key, (float(burst), now_ms))
            tokens = min(float(burst), tokens + max(now_ms - at, 0) / 1000 * rate_per_s)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now_ms)
                return math.ceil((1.0 - tokens) / rate_per_s * 1000) / 1000
            self._buckets[key] = (tokens - 1.0, now_ms)
            if len(self._buckets) > self._max:
                self._prune(rate_per_s, burst, now_ms)
            return 0.0

    def _prune(self, rate_per_s: float, burst: int, now_ms: int) -> None:
        full = [
            k
            for k, (t, at) in self._buckets.items()
            if t + max(now_ms - at, 0) / 1000 * rate_per_s >= burst
        ]
        for k in full:
            del self._buckets[k]
        excess = len(self._buckets) - self._max
        if excess > 0:  # insertion order: the least recently inserted go first
            for k in list(self._buckets)[:excess]:
                del self._buckets[k]
