"""Running part of a test as an unprivileged user: the tests run as root, who reads and
writes through every file mode, so read-only and unreadable cases need another user."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import TypeVar

__all__ = ["NOBODY", "as_nobody"]

NOBODY = 65534
T = TypeVar("T")


def as_nobody(fn: Callable[[], T]) -> T:
    """``fn()`` in a forked child running as user ``nobody`` (directly when not root); its
    result is pickled back, and an exception in the child fails the calling test."""
    if os.geteuid() != 0:
        return fn()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        status = 0
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            result: tuple[str, object] = ("ok", fn())
        except BaseException as exc:
            result, status = ("error", repr(exc)), 1
        with os.fdopen(write_end, "wb") as pipe:
            pickle.dump(result, pipe)
        os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        kind, value = pickle.load(pipe)
    os.waitpid(pid, 0)
    assert kind == "ok", value
    return value  # type: ignore[no-any-return]
