"""The client's one reading of the wall clock.

Everything in the client that needs "now" in milliseconds since the Unix epoch
calls :func:`now_ms`, or a ``clock`` passed in (``Callable[[], int]``, default
:func:`now_ms`) where tests need to set the time.  Pure code (``protocol``)
never reads a clock: it is handed ``now_ms``.
"""

from __future__ import annotations

import time

__all__ = ["now_ms"]


def now_ms() -> int:
    """Wall-clock milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000
