"""Reading our own chain back before a push: restore, copied key, withheld head (SPEC.md
"Restore and copied keys"), decided from values.

Per project a device keeps ``own``, the (seq, hash) of the newest manifest of its chain it
wrote or adopted, and every (seq, hash) it is about to publish, recorded before it sends
it (``sent``: an interrupted push is thereby still recognised as its own); per device,
``adopted``, set at the end of a sync in which it adopted.  At each sync, with ``T`` the
verified head of its own chain on the transport and ``W`` the highest seq teammates'
verified manifests witness for it, :func:`decide` takes the first row that applies:

- **publish** (:data:`PUBLISH`): ``T`` absent, not above ``own`` (the same hash at
  ``own.seq``), or one it recorded before sending; and ``W`` not above that head;
- **behind-witness** (:data:`BEHIND_WITNESS`): ``W`` above both ``T`` and ``own``: the
  transport withholds a head of this chain, and publishing would drop what it holds;
- **adopt** (:data:`ADOPT`): ``T`` above ``own`` (or no ``own``: a new store), not
  recorded, ``adopted`` unset: a restore; its records come back as written here;
- **key-in-use** (:data:`KEY_IN_USE`): ``T`` above ``own``, not recorded, ``adopted``
  set; or ``T`` at ``own.seq`` with another hash: another machine writes with this key.

A push that publishes takes a seq of at least :attr:`OwnChainStep.next_seq`: above
``T``, ``own``, ``W`` and every seq recorded, so that no seq anyone may have seen is used
twice.  Pure: the caller read the store and verified ``T`` under its own key.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

__all__ = [
    "ACTIONS",
    "ADOPT",
    "BEHIND_WITNESS",
    "KEY_IN_USE",
    "PUBLISH",
    "Link",
    "OwnChainStep",
    "decide",
]

PUBLISH = "publish"
"""Publish as usual, above every seq of the chain known here."""
BEHIND_WITNESS = "behind-witness"
"""Publish nothing in the project: the transport withholds a head teammates witnessed."""
ADOPT = "adopt"
"""Merge the transport's head back as written here, then publish above it (a restore)."""
KEY_IN_USE = "key-in-use"
"""Stop before writing anything: another machine writes with this key (a copied home)."""
ACTIONS: tuple[str, ...] = (PUBLISH, BEHIND_WITNESS, ADOPT, KEY_IN_USE)


@dataclass(frozen=True, slots=True, order=True)
class Link:
    """One manifest of a chain, by its seq and object hash."""

    seq: int
    hash: str


@dataclass(frozen=True, slots=True)
class OwnChainStep:
    """What the next push of a project does with its own chain (:func:`decide`)."""

    action: str  # one of ACTIONS
    next_seq: int = 0  # the lowest seq the next manifest may take (0: it publishes none)


def decide(
    *,
    own: Link | None,
    sent: Collection[Link],
    adopted: bool,
    transport: Link | None,
    witnessed: int,
) -> OwnChainStep:
    """The row of SPEC "Restore and copied keys" that applies (see the module docstring).

    ``own``: the head this store wrote or adopted (None: a new store); ``sent``: every
    (seq, hash) recorded before sending; ``adopted``: this device adopted in an earlier
    sync; ``transport``: the newest manifest of our chain the transport holds, verified
    under our key (None: none above ``own``); ``witnessed``: the highest seq teammates
    witness for the chain (0: none)."""
    own_seq = 0 if own is None else own.seq
    t_seq = 0 if transport is None else transport.seq
    floor = max(own_seq, t_seq, witnessed, max((s.seq for s in sent), default=0)) + 1
    recorded = transport is not None and transport in sent
    if transport is None or recorded or transport.seq < own_seq or transport == own:
        head = max(own_seq, t_seq if recorded else 0)
        if witnessed <= head:
            return OwnChainStep(PUBLISH, floor)
    if witnessed > max(own_seq, t_seq):
        return OwnChainStep(BEHIND_WITNESS)
    if transport is not None and transport.seq > own_seq and not adopted:
        return OwnChainStep(ADOPT, floor)
    return OwnChainStep(KEY_IN_USE)
