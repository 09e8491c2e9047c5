"""Dropping versions a replica must no longer hold, without losing anyone else's.

One predicate for every drop, :class:`DropRule` (:func:`drop_rule` builds it from the
trusted roster): SPEC.md "Dropping versions" and "Revocation".  The new winner of an
affected id is the greatest version (:func:`sealmem.protocol.merge.version_key`) that is
not dropped, ``None`` when every one is (the replica keeps it in history).

A replica that wrote while its own clock was far ahead does not drop its own
versions: :func:`restamp` makes each a new version of the same memory, stamped
from the recovered clock (:func:`recovered_clock`), so that teammates accept it.
A reader whose chain head for a pinned writer is past the pin forgets that head
(:func:`heads_past_pins`) and accepts the pinned manifest again.

Pure functions over values: the caller reads the versions and writes the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .hlc import Hlc, receive, tick, too_far_ahead
from .merge import version_key
from .record import Record
from .roster import Roster
from .state import ChainHead

__all__ = [
    "DropRule",
    "Held",
    "drop_rule",
    "dropped_writers",
    "heads_past_pins",
    "pinned_seqs",
    "recovered_clock",
    "restamp",
]


@dataclass(frozen=True, slots=True)
class Held:
    """A version a replica holds, with the seq of the writer's snapshot it arrived in
    (``None``: not pulled, i.e. written or imported here)."""

    record: Record
    snapshot_seq: int | None = None


@dataclass(frozen=True, slots=True)
class DropRule:
    """The one predicate of every drop, for one project (see the module docstring):
    ``writers`` revoked without a pin here; ``pins``, writer -> its pinned seq here."""

    now_ms: int
    writers: frozenset[str] = frozenset()
    pins: Mapping[str, int] = field(default_factory=dict)

    def drops(self, held: Held) -> bool:
        record = held.record
        if too_far_ahead(record.hlc, self.now_ms):
            return True
        if record.editor in self.writers:
            return True
        pin = self.pins.get(record.editor)
        return pin is not None and held.snapshot_seq is not None and held.snapshot_seq > pin

    def best(self, versions: Iterable[Held]) -> Held | None:
        """The greatest version (``version_key``) this rule keeps; None if none is left."""
        kept = [v for v in versions if not self.drops(v)]
        return max(kept, key=lambda v: version_key(v.record)) if kept else None

    @property
    def editors(self) -> frozenset[str]:
        """Editors some of whose versions this rule drops whatever their clock."""
        return self.writers | frozenset(self.pins)


def dropped_writers(roster: Roster, project: str, me: str) -> frozenset[str]:
    """Revoked writers without a pin in ``project`` (never ``me``): all their versions go."""
    return frozenset(r.kid for r in roster.revocations if r.kid != me and project not in r.pins)


def pinned_seqs(roster: Roster, project: str, me: str) -> dict[str, int]:
    """Revoked writers with a pin in ``project`` (not ``me``) -> the pinned seq."""
    return {
        r.kid: r.pins[project].seq for r in roster.revocations if r.kid != me and project in r.pins
    }


def drop_rule(roster: Roster | None, project: str, me: str, now_ms: int) -> DropRule:
    """The drop rule of member ``me`` in ``project``; only the clock bound without a roster
    (a store in no team)."""
    if roster is None:
        return DropRule(now_ms)
    pins = pinned_seqs(roster, project, me)
    return DropRule(now_ms, dropped_writers(roster, project, me), pins)


def heads_past_pins(
    roster: Roster, heads: Mapping[tuple[str, str], ChainHead], me: str
) -> list[tuple[str, str]]:
    """The (writer, project) chain heads of a reader that are at or past a pin of that
    writer but are not the pinned manifest, sorted: the heads the reader forgets."""
    out = []
    for revocation in roster.revocations:
        if revocation.kid == me:
            continue
        for project, pin in revocation.pins.items():
            head = heads.get((revocation.kid, project))
            if head is None or head.seq < pin.seq:
                continue  # not there yet: its next pull stops at the pin
            if (head.seq, head.hash) != (pin.seq, pin.manifest_hash):
                out.append((revocation.kid, project))
    return sorted(out)


def recovered_clock(clock: Hlc, winners: Iterable[Hlc], now_ms: int) -> Hlc | None:
    """The store clock to use instead of ``clock`` when it is too far ahead; else None.

    It goes back to the greatest of ``now_ms`` and the winners' clocks that are
    within the bound (the others are dropped or stamped again), so a later local
    edit still wins over every version the replica keeps.
    """
    if not too_far_ahead(clock, now_ms):
        return None
    kept = (w for w in winners if not too_far_ahead(w, now_ms))
    return max((Hlc(now_ms, 0), *kept))


def restamp(
    record: Record,
    clock: Hlc,
    held: Iterable[Hlc],
    *,
    me: str,
    now_ms: int,
) -> tuple[Record, Hlc]:
    """A far-ahead version this replica wrote, as a new version of ``me`` after ``clock``.

    ``held`` are the clocks of the other versions of that memory the replica keeps;
    the new version is stamped after each of them that is within the bound, so it
    still wins over every version it had replaced.  Same id, content and links.
    Returns the new version and the store clock after it.
    """
    for stamp in held:
        if not too_far_ahead(stamp, now_ms):
            clock = receive(clock, stamp, now_ms)
    stamp = tick(clock, now_ms)
    return record.evolve(hlc=stamp, editor=me), stamp
