"""Pulled versions into the local store, through the one pure merge (DESIGN §3).

:func:`apply_versions` runs one batch (the records of one or more chunks) in four steps:

1. **read**: the local rows of the batch's ids, in one query, become the pure
   merge's inputs: local winners, importance floors, and the store's clock.  A
   pulled version equal to the local winner (a chunk opened again because another
   record in it changed) is left out here: the merge would keep the local one;
2. **scrub**: the redaction rules run again over each other pulled version (client
   policy: a teammate's older sealmem may have let a secret through), except over
   text this store's rules already redacted (a metadata-only update);
3. **merge**: :func:`sealmem.protocol.merge.merge_many`, the function the merge
   laws are property-tested against, decides winners, losers, floors and clock;
4. **write**: changed winners with the snapshot's provenance (the replaced local
   version goes to ``history``), pulled versions that lost to ``history``, the
   store's clock.  A tombstone that wins purges the text of the memory's versions
   here too (:func:`sealmem.client.store.writer.write`, a few statements per
   batch; ``ApplyResult.purged``
   counts them, and the caller runs :func:`sealmem.client.store.scrub.settle` after
   committing), and a pulled version with content that loses to a tombstone is
   not kept.

It runs inside the caller's transaction, so a snapshot refused part way through
merges nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...crypto import SUITE
from ...protocol.hlc import Hlc, receive
from ...protocol.merge import effective_importance, merge_many
from ...protocol.record import Record
from ...protocol.snapshot import bucket_key
from ..store.memory import Provenance
from ..store.redacting import redact_versions
from ..store.rows import read_hlc, record_from_row, save_hlc
from ..store.writer import Batch, Keep, Write, load_rows, write

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
    conn: sqlite3.Connection,
    records: Iterable[Record],
    provenance: Provenance,
    now: int,
    bucket_keys: Mapping[str, int] | None = None,
) -> ApplyResult:
    """Merge verified versions from one snapshot (see the module docstring).

    ``bucket_keys`` may give the ids' bucket keys (the chunk opener hashed them); a new
    row is stored with its key (:func:`~sealmem.protocol.snapshot.bucket_key` of the id,
    computed here when not given)."""
    keys = {} if bucket_keys is None else bucket_keys
    result = ApplyResult()
    pulled = list(records)
    if not pulled:
        return result
    rows = load_rows(conn, (r.id for r in pulled))
    local = {rid: record_from_row(row) for rid, row in rows.items()}
    incoming: list[Record] = []
    # the version this store holds, byte for byte: nothing to redact or merge
    others = [record for record in pulled if local.get(record.id) != record]
    for cleaned, found in redact_versions(conn, others, local):
        result.redacted += bool(found)
        incoming.append(cleaned)
    skipped_same = len(pulled) - len(incoming)
    clock = read_hlc(conn)
    if not incoming:
        result.unchanged = skipped_same
        _save_clock(conn, clock, _seen(clock, pulled, set(), now))
        return result
    floors = {
        rid: float(row["local_importance"])
        for rid, row in rows.items()
        if float(row["local_importance"]) > float(row["importance"])
    }
    merged = merge_many(local, incoming, now_ms=now, clock=clock, floors=floors)
    # a new row gets its bucket key now (one hash), not from the next push (an UPDATE)
    writes = [
        Write(
            merged.winners[rid],
            provenance,
            effective_importance(merged.winners[rid], merged.floors.get(rid)),
            1 if (row := rows.get(rid)) is None else int(row["seen_count"]),
            now,
            row,
            None if row is not None else keys[rid] if rid in keys else bucket_key(SUITE, rid),
            local.get(rid),
        )
        for rid in merged.changed
    ]
    pulled_losers = [loser for loser in merged.losers if loser is not local.get(loser.id)]
    keeps = [Keep(loser, provenance, loser.importance, 1, now, now) for loser in pulled_losers]
    # archives each replaced local version in history
    result.purged += write(conn, Batch(writes=writes, keeps=keeps)).purged
    result.new = sum(1 for w in writes if w.previous is None)
    result.updated = len(writes) - result.new
    result.unchanged = skipped_same + max(
        len(incoming) - len(merged.skipped) - len(merged.changed), 0
    )
    result.skipped = [s.detail for s in merged.skipped]
    if skipped_same:  # the clock sees every pulled version, as merging them all would
        _save_clock(conn, clock, _seen(clock, pulled, {s.record.id for s in merged.skipped}, now))
    else:
        _save_clock(conn, clock, merged.clock)
    return result


def _seen(clock: Hlc, pulled: list[Record], skipped: set[str], now: int) -> Hlc:
    """The store clock after receiving every pulled version the merge did not skip, in
    order (what :func:`merge_many` gives for the whole batch)."""
    for record in pulled:
        if record.id not in skipped:
            clock = receive(clock, record.hlc, now)
    return clock


def _save_clock(conn: sqlite3.Connection, before: Hlc, after: Hlc) -> None:
    if after != before:
        save_hlc(conn, after)
