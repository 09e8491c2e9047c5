"""When :class:`~.hub.HubTransport` repeats a request: one policy, kept here.

A request is safe to repeat when a repeat cannot change what the hub holds: a GET, or a
PUT of a chunk (its id is the hash of its bytes, so a repeat stores nothing new).  Any
request may be repeated when the connection failed before it was sent (the hub never saw
it).  A manifest, roster or keyring PUT or a POST whose answer was lost is not repeated:
its effect is unknown, and the next sync reads the state back.
"""

from __future__ import annotations

import random
import time

import httpx

__all__ = ["ATTEMPTS", "RETRY_STATUSES", "Backoff", "never_sent"]

#: attempts of one request at most, the first included
ATTEMPTS = 6
#: answers of a hub (or the proxy before it) that are worth another attempt
RETRY_STATUSES = frozenset({429, 502, 503, 504})
_FIRST_S = 0.2
_CAP_S = 5.0


def never_sent(exc: httpx.HTTPError) -> bool:
    """True when the request cannot have reached the hub (no connection was had for it)."""
    return isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


class Backoff:
    """Capped exponential waits with full jitter, within ``budget_s`` of the first attempt."""

    def __init__(self, budget_s: float) -> None:
        self._deadline = time.monotonic() + budget_s
        self.attempts = 1

    def pause(self, asked_s: float | None = None) -> bool:
        """Sleep before the next attempt (``asked_s``: the hub's Retry-After); False, without
        sleeping, when the attempts or the budget are spent."""
        wait = asked_s
        if wait is None:
            wait = random.uniform(0, min(_CAP_S, _FIRST_S * 2 ** (self.attempts - 1)))
        if self.attempts >= ATTEMPTS or time.monotonic() + wait > self._deadline:
            return False
        time.sleep(wait)
        self.attempts += 1
        return True
