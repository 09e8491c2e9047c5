"""What a reader does about the chunks of an accepted manifest it could not read.

A snapshot is read in part (SPEC "Partial reads"): every chunk that verifies is merged,
each chunk that is missing or does not hash to its id is a hole, kept with the chain
head (:func:`~sealmem.client.sync.replica.holes`) and tried again at each pull until
the writer's repair replaces it.  The reader tells the writer through the transport
(:meth:`~sealmem.client.sync.transport.Transport.report_holes`; the hub marks what it
lost by itself) and says it once per read in the sync's refusals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...protocol.chunks import Hole
from ...protocol.errors import InputError, TransportError
from ...protocol.manifest import Manifest
from .session import Refusal, Team

__all__ = ["report"]


class _Sink(Protocol):
    refused: list[Refusal]
    warnings: list[str]


def report(team: Team, m: Manifest, holes: Sequence[Hole], summary: _Sink) -> None:
    """Report ``holes`` of ``m`` (none: clear an earlier report) to its writer, and in
    ``summary`` when there are some; a report the transport cannot take is only warned."""
    ids = [h.ref.id for h in holes]
    try:
        team.transport.report_holes(m.project, m.writer, team.me, ids)
    except (TransportError, InputError) as exc:  # a read-only folder, say: the writer's
        # own check (or the hub's mark) still finds them
        summary.warnings.append(f"could not tell {m.writer[:8]} what it should republish: {exc}")
    if not holes:
        return
    first = holes[0]
    summary.refused.append(
        Refusal(
            first.reason,
            f"snapshot {m.writer[:8]}/{m.project} seq {m.seq}",
            f"{len(holes)} of its {len(m.chunks)} chunks are missing or damaged in the "
            f"transport (first: bucket {first.ref.bucket}, chunk {first.ref.id[:16]}); the "
            "other chunks were merged, and its writer republishes these at its next sync",
        )
    )
