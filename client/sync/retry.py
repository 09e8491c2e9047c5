"""When :class:`~.hub.HubTransport` repeats a request, and how it settles one whose answer
was lost: one policy, kept here.

A request is safe to repeat when a repeat cannot change what the hub holds: a GET, a PUT
of a chunk (its id is the hash of its bytes, so a repeat stores nothing new), a collect
(it deletes the writer's chunks outside a list: a repeat deletes nothing the first would
have kept).  Any request may be repeated when the connection failed before it was sent (the
hub never saw it), or when the hub answered ``hub-busy`` (it refuses before it reads the
body: nothing was done).  ``disk-full`` is never repeated: it lasts until the operator acts.

A manifest, roster or keyring PUT or a join post whose answer was lost after it was sent
(a reset, a truncated body, a gateway's 502 or 504) has an unknown effect.  It is not
repeated blindly: the transport reads the state back (:class:`Outcome`) and decides with
:func:`settle`: our very bytes are there (:attr:`Outcome.LANDED`): done; nothing is there
(:attr:`Outcome.ABSENT`): send it once more, signed afresh, if the budgets below leave
an attempt; another object is there
(:attr:`Outcome.OTHER`): a conflict, as if the hub had answered 409.

Waits are capped exponential with full jitter, honour ``Retry-After``, and end at the
request's budget or the sync's, whichever comes first (:class:`Backoff`).
"""

from __future__ import annotations

import enum
import random
import time
from typing import Literal

import httpx

from ...protocol import hubapi

__all__ = [
    "ATTEMPTS",
    "RETRY_STATUSES",
    "UNKNOWN_STATUSES",
    "Backoff",
    "Outcome",
    "Settled",
    "never_sent",
    "repeats",
    "settle",
]

#: attempts of one request at most, the first included
ATTEMPTS = 6
#: answers of a hub (or the proxy before it) that are worth another attempt
RETRY_STATUSES = frozenset({429, 502, 503, 504})
#: answers of a proxy before the hub that leave unknown whether the hub did the request
UNKNOWN_STATUSES = frozenset({502, 504})
_FIRST_S = 0.2
_CAP_S = 5.0


def never_sent(exc: httpx.HTTPError) -> bool:
    """True when the request cannot have reached the hub (no connection was had for it)."""
    return isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout))


def repeats(status: int, code: str, repeatable: bool) -> bool:
    """Whether a refusal (``status``, the hub's ``code``) is worth another attempt of a
    request (``repeatable``: a repeat is harmless)."""
    if status not in RETRY_STATUSES or code == hubapi.DISK_FULL:
        return False
    return repeatable or status == 429 or code == hubapi.BUSY


class Outcome(enum.Enum):
    """What reading the state back found after a request whose answer was lost."""

    LANDED = "landed"  # our very bytes are there: the request was done
    ABSENT = "absent"  # nothing is there yet: the request was not done
    OTHER = "other"  # another object is there: someone else's, a conflict


Settled = Literal["done", "again", "conflict", "lost"]


def settle(outcome: Outcome, resent: bool) -> Settled:
    """After a lost answer and a read back: ``done``; ``again``, send it once more (only if
    not ``resent`` already); ``conflict``, as a 409; ``lost``, give up with the lost answer."""
    if outcome is Outcome.LANDED:
        return "done"
    if outcome is Outcome.OTHER:
        return "conflict"
    return "lost" if resent else "again"


class Backoff:
    """Capped exponential waits with full jitter, within ``budget_s`` of the first attempt
    and before ``deadline`` (a ``time.monotonic()`` value: the sync's budget), if given."""

    def __init__(self, budget_s: float, deadline: float | None = None) -> None:
        self._deadline = time.monotonic() + budget_s
        if deadline is not None:
            self._deadline = min(self._deadline, deadline)
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
