"""Limits, each answered with a clear JSON error: body size (413), request rate (429),
team storage quota (507)."""

from __future__ import annotations

import math

from starlette.requests import Request

from ..protocol import hubapi
from .errors import Refusal
from .storage import Storage

__all__ = ["RateLimiter", "check_quota", "read_body"]


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed ``limit``."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(int(declared), limit)
    chunks: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise _too_large(size, limit)
        chunks.append(part)
    return b"".join(chunks)


def _too_large(size: int, limit: int) -> Refusal:
    return Refusal(
        413,
        hubapi.TOO_LARGE,
        f"the request body is {'at least ' if size > limit else ''}{size} bytes; "
        f"this endpoint accepts at most {limit}",
    )


class RateLimiter:
    """Token buckets per key, kept by the storage (shared by every replica):
    ``rate`` tokens per second, at most ``burst`` saved up."""

    def __init__(self, storage: Storage, rate: float, burst: int, what: str) -> None:
        self.rate = rate
        self.burst = burst
        self._storage = storage
        self._what = what

    def take(self, key: str, now_ms: int) -> None:
        """Spend one token of ``key``; raise 429 with a retry delay when none is left."""
        wait_s = self._storage.take_token(f"{self._what}:{key}", self.rate, self.burst, now_ms)
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
