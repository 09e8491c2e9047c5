"""Dropping versions a replica must no longer hold, without losing anyone else's.

Two cases share one rule (DESIGN §4 "Revocation", SPEC.md "Dropping versions"):

- a writer was **revoked** without a pin for the project: its versions go;
- a version's clock is **too far ahead** (``protocol.hlc.too_far_ahead``), as a
  store that merged it before clocks were bounded may still hold.

For each affected memory id the new winner is the greatest version under
:func:`sealmem.protocol.merge.version_key` among the versions the replica holds
(the current winner and its local history) that are not dropped; ``None`` when
every version is dropped (the memory leaves the winners; the replica keeps it in
history).  Nothing written by anyone else is ever lost.

Pure functions over values: the caller reads the versions and writes the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Set

from .hlc import MAX_AHEAD_MS, Hlc, too_far_ahead
from .merge import version_key
from .record import Record
from .roster import Roster

__all__ = [
    "best_remaining",
    "drop_ahead",
    "drop_versions",
    "drop_writer",
    "dropped_writers",
    "recovered_clock",
]


def best_remaining(versions: Iterable[Record], dropped: Callable[[Record], bool]) -> Record | None:
    """The greatest version (``version_key``) that is not ``dropped``; None if none is left."""
    kept = [v for v in versions if not dropped(v)]
    return max(kept, key=version_key) if kept else None


def drop_versions(
    versions_by_id: Mapping[str, Iterable[Record]], dropped: Callable[[Record], bool]
) -> dict[str, Record | None]:
    """Per id, the winner once the ``dropped`` versions are gone (see the module docstring)."""
    return {mid: best_remaining(versions, dropped) for mid, versions in versions_by_id.items()}


def drop_writer(
    versions_by_id: Mapping[str, Iterable[Record]], kid: str | Set[str]
) -> dict[str, Record | None]:
    """Per id, the best version written by anyone but ``kid`` (one kid or a set of them)."""
    kids = frozenset((kid,)) if isinstance(kid, str) else frozenset(kid)
    return drop_versions(versions_by_id, lambda r: r.editor in kids)


def drop_ahead(
    versions_by_id: Mapping[str, Iterable[Record]],
    now_ms: int,
    max_ahead_ms: int = MAX_AHEAD_MS,
) -> dict[str, Record | None]:
    """Per id, the best version whose clock is at most ``max_ahead_ms`` ahead of ``now_ms``."""
    return drop_versions(versions_by_id, lambda r: too_far_ahead(r.hlc, now_ms, max_ahead_ms))


def dropped_writers(roster: Roster, project: str, me: str) -> frozenset[str]:
    """Revoked writers whose versions in ``project`` a replica of member ``me`` drops.

    A revocation that pins a manifest of the project keeps what the writer published
    up to it (the verifier accepts exactly that manifest); without a pin the
    writer's versions there go.  A revoked member never drops its own versions.
    """
    return frozenset(r.kid for r in roster.revocations if r.kid != me and project not in r.pins)


def recovered_clock(
    clock: Hlc, winners: Iterable[Hlc], now_ms: int, max_ahead_ms: int = MAX_AHEAD_MS
) -> Hlc | None:
    """The store clock to use instead of ``clock`` when it is too far ahead; else None.

    It goes back to the greatest of ``now_ms`` and the remaining winners' clocks,
    so a later local edit still wins over every version the replica holds.
    """
    if not too_far_ahead(clock, now_ms, max_ahead_ms):
        return None
    return max((Hlc(now_ms, 0), *winners))
