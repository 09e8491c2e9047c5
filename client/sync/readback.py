"""What the hub's state, read back after a lost answer, says of the request that was lost
(:class:`~.retry.Outcome`; the policy that acts on it is :mod:`~.retry`'s).

Each function compares what the hub serves now with what was sent.  The hub is not
trusted, and need not be: the outcome only decides between "done", "send once more" (a
hub that holds the object refuses the repeat, or takes it as the no-op it is) and "a
conflict" (the push or the publication reads its own chain back and tries again).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...protocol.errors import Rejected
from ...protocol.manifest import peek
from .retry import Outcome

__all__ = ["keyring_outcome", "manifest_outcome", "roster_outcome"]


def manifest_outcome(newest: bytes | None, ours: bytes, seq: int) -> Outcome:
    """``newest``: the writer's newest manifest on the hub; ``ours`` was sent as ``seq``."""
    if newest is None:
        return Outcome.ABSENT
    if newest == ours:
        return Outcome.LANDED
    try:
        held = peek(newest).seq
    except Rejected:
        return Outcome.OTHER
    return Outcome.ABSENT if held < seq else Outcome.OTHER


def roster_outcome(above: Sequence[bytes], ours: bytes) -> Outcome:
    """``above``: the rosters the hub lists from the version ``ours`` was sent as, in order."""
    if not above:
        return Outcome.ABSENT
    return Outcome.LANDED if above[0] == ours else Outcome.OTHER


def keyring_outcome(held: Sequence[bytes], ours: bytes) -> Outcome:
    """``held``: the project's keyrings on the hub (several may share an epoch: a keyring is
    published again citing a newer roster, so another one there is no conflict)."""
    return Outcome.LANDED if ours in held else Outcome.ABSENT
