"""Merging pulled record versions into a replica (DESIGN §3, SPEC.md "Merge").

Pure functions over values: no clock (``now_ms`` is passed in), no I/O.  Winners
converge (a join-semilattice over :func:`version_key`); importance floors are local
policy, kept beside the winners and never published.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from . import canonical
from .errors import InputError
from .hlc import Hlc, receive
from .record import Record

__all__ = [
    "DEFAULT_GRACE_MS",
    "SKIP_OTHER_PROJECT",
    "MergeOutcome",
    "MergeResult",
    "Skipped",
    "collect_tombstones",
    "effective_importance",
    "merge",
    "merge_many",
    "version_key",
    "wins",
]

DEFAULT_GRACE_MS = 180 * 24 * 60 * 60 * 1000
"""How long a tombstone is kept before :func:`collect_tombstones` drops it (180 days)."""

SKIP_OTHER_PROJECT = "other-project"
"""Skip reason: the id already belongs to a different project in this replica."""


def version_key(record: Record) -> tuple[int, int, str, bytes]:
    """The total order of versions: the greatest wins.  The canonical bytes only make the
    order total, so that replicas agree even on a writer whose HLC did not tick."""
    return (*record.order_key, canonical.encode(record.to_wire()))


def wins(candidate: Record, current: Record) -> bool:
    """True when ``candidate`` is strictly greater than ``current`` in version order."""
    if candidate.order_key != current.order_key:
        return candidate.order_key > current.order_key
    return canonical.encode(candidate.to_wire()) > canonical.encode(current.to_wire())


def effective_importance(winner: Record, floor: float | None) -> float:
    """The importance this replica uses for ``winner``: never below its local floor."""
    return winner.importance if floor is None else max(floor, winner.importance)


@dataclass(frozen=True, slots=True)
class MergeOutcome:
    """What merging one incoming version into one local winner decided."""

    winner: Record | None  # the version to keep
    changed: bool  # it differs from the local one
    loser: Record | None  # the replaced or discarded version, for history; None: the same
    floor: float | None  # the importance floor to store (None: none)
    skipped_reason: str | None = None  # set when the incoming version was not considered
    detail: str = ""  # why it was skipped


def _normal_floor(floor: float | None, winner: Record) -> float | None:
    return floor if floor is not None and floor > winner.importance else None


def merge(local: Record | None, incoming: Record, *, floor: float | None = None) -> MergeOutcome:
    """Merge one pulled version, already verified and validated, into the local winner of
    the same id, whose importance floor is ``floor``."""
    if local is None:
        return MergeOutcome(incoming, True, None, None)
    if local.id != incoming.id:
        raise InputError(
            f"cannot merge version of {incoming.id} into {local.id}: merge pairs versions "
            "of one memory id; look the local winner up by the incoming id"
        )
    if local.project != incoming.project:
        return MergeOutcome(
            local,
            False,
            None,
            floor,
            SKIP_OTHER_PROJECT,
            f"memory {incoming.id} from {incoming.editor} is in project {incoming.project!r}, "
            f"but this replica holds it in project {local.project!r}; it was skipped",
        )
    if incoming == local:  # the same version again (a re-pull, a re-import): cheap to see
        return MergeOutcome(local, False, None, floor)
    if not wins(incoming, local):
        same = canonical.encode(incoming.to_wire()) == canonical.encode(local.to_wire())
        return MergeOutcome(local, False, None if same else incoming, floor)
    before = effective_importance(local, floor)
    return MergeOutcome(incoming, True, local, _normal_floor(before, incoming))


@dataclass(frozen=True, slots=True)
class Skipped:
    """An incoming version that was not merged, and why."""

    record: Record
    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The replica after :func:`merge_many`; ``winners`` and ``floors`` are complete."""

    winners: dict[str, Record]
    floors: dict[str, float]
    changed: tuple[str, ...]  # ids whose winner changed, sorted
    losers: tuple[Record, ...]  # versions that lost, in arrival order (for history)
    skipped: tuple[Skipped, ...]
    clock: Hlc  # the replica's HLC after seeing every merged version


def merge_many(
    state: Mapping[str, Record],
    incoming: Iterable[Record],
    *,
    now_ms: int,
    clock: Hlc,
    floors: Mapping[str, float] | None = None,
) -> MergeResult:
    """Merge pulled versions into ``state`` (id -> winner); nothing is mutated.  Every
    merged version advances ``clock``, the replica's HLC before the pull."""
    winners = dict(state)
    new_floors = dict(floors or {})
    changed: set[str] = set()
    losers: list[Record] = []
    skipped: list[Skipped] = []
    for record in incoming:
        outcome = merge(winners.get(record.id), record, floor=new_floors.get(record.id))
        if outcome.skipped_reason is not None:
            skipped.append(Skipped(record, outcome.skipped_reason, outcome.detail))
            continue
        clock = receive(clock, record.hlc, now_ms)
        if outcome.loser is not None:
            losers.append(outcome.loser)
        if outcome.changed and outcome.winner is not None:
            winners[record.id] = outcome.winner
            changed.add(record.id)
        if outcome.floor is None:
            new_floors.pop(record.id, None)
        else:
            new_floors[record.id] = outcome.floor
    return MergeResult(
        winners, new_floors, tuple(sorted(changed)), tuple(losers), tuple(skipped), clock
    )


def collect_tombstones(
    records: Mapping[str, Record], now_ms: int, grace_ms: int = DEFAULT_GRACE_MS
) -> dict[str, Record]:
    """``records`` without the tombstones whose deletion (``hlc.wall``) is at least
    ``grace_ms`` old.  A replica that still holds an older live version of a collected id
    can bring it back: the grace period must outlast the longest offline member."""
    if grace_ms < 0:
        raise InputError(f"grace period {grace_ms} ms is negative; pass a duration >= 0")
    return {
        key: record
        for key, record in records.items()
        if not (record.deleted and now_ms - record.hlc.wall >= grace_ms)
    }
