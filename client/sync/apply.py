"""Pulled versions into the local store, through the one pure merge (DESIGN §3).

:func:`apply_versions` runs one batch (the records of one chunk) in four steps:

1. **scrub**: the redaction rules run again over each pulled version (client
   policy: a teammate's older sealmem may have let a secret through), except over
   text this store's rules already redacted (a re-pull, a metadata-only update);
2. **read**: the local rows of the batch's ids, in one query, become the pure
   merge's inputs: local winners, importance floors, and the store's clock;
3. **merge**: :func:`sealmem.protocol.merge.merge_many`, the function the merge
   laws are property-tested against, decides winners, losers, floors and clock;
4. **write**: changed winners with the snapshot's provenance (the replaced local
   version goes to ``history``), pulled versions that lost to ``history``, the
   store's clock.  A tombstone that wins purges the text of the memory's versions
   here too (:func:`sealmem.client.store.batch.write_versions`, a few statements
   per batch; ``ApplyResult.purged``
   counts them, and the caller runs :func:`sealmem.client.store.scrub.settle` after
   committing), and a pulled version with content that loses to a tombstone is
   not kept.

It runs inside the caller's transaction, so a snapshot refused part way through
merges nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field

from ...protocol.merge import effective_importance, merge_many
from ...protocol.record import Record
from ..store.batch import Keep, Write, keep_versions, load_rows, redact_versions, write_versions
from ..store.memory import Provenance
from ..store.rows import (
    read_hlc,
    record_from_row,
    save_hlc,
)

__all__ = ["ApplyResult", "apply_versions"]


@dataclass
class ApplyResult:
    """What merging pulled versions did (added up over the chunks of one snapshot)."""

    new: int = 0
    updated: int = 0
    unchanged: int = 0
    redacted: int = 0
    purged: int = 0  # versions with content removed because a tombstone won
    skipped: list[str] = field(default_factory=list)

    def add(self, other: ApplyResult) -> None:
        self.new += other.new
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.redacted += other.redacted
        self.purged += other.purged
        self.skipped.extend(other.skipped)


def apply_versions(
    conn: sqlite3.Connection, records: Iterable[Record], provenance: Provenance, now: int
) -> ApplyResult:
    """Merge verified versions from one snapshot (see the module docstring)."""
    result = ApplyResult()
    incoming: list[Record] = []
    for cleaned, found in redact_versions(conn, records):
        result.redacted += bool(found)
        incoming.append(cleaned)
    if not incoming:
        return result
    rows = load_rows(conn, (r.id for r in incoming))
    local = {rid: record_from_row(row) for rid, row in rows.items()}
    floors = {
        rid: float(row["local_importance"])
        for rid, row in rows.items()
        if float(row["local_importance"]) > float(row["importance"])
    }
    clock = read_hlc(conn)
    merged = merge_many(local, incoming, now_ms=now, clock=clock, floors=floors)
    writes = [
        Write(
            merged.winners[rid],
            provenance,
            effective_importance(merged.winners[rid], merged.floors.get(rid)),
            1 if rows.get(rid) is None else int(rows[rid]["seen_count"]),
            now,
            rows.get(rid),
        )
        for rid in merged.changed
    ]
    # archives each replaced local version in history
    result.purged += write_versions(conn, writes)
    result.new = sum(1 for w in writes if w.previous is None)
    result.updated = len(writes) - result.new
    pulled_losers = [loser for loser in merged.losers if loser is not local.get(loser.id)]
    keep_versions(
        conn,
        [Keep(loser, provenance, loser.importance, 1, now, now) for loser in pulled_losers],
        skip_winner=False,
    )
    result.unchanged = max(len(incoming) - len(merged.skipped) - len(merged.changed), 0)
    result.skipped = [s.detail for s in merged.skipped]
    if merged.clock != clock:
        save_hlc(conn, merged.clock)
    return result
