"""The pull half of a sync: teammates' snapshots, verified, opened and merged.

Per readable project and writer whose newest manifest moved:

1. the manifest is accepted by :func:`sealmem.protocol.verify.accept_manifest`
   (grant, chain, rollback, fork, witnesses); when the newest one is refused,
   older ones are tried, and the first refusal is reported; a delta manifest is
   rebuilt from its base (:class:`sealmem.client.sync.bases.Finder`), a v3 one
   before its witnessed heads are read;
2. a :class:`~sealmem.protocol.chunks.SnapshotOpener`, started from the chunk
   cache, names the chunks not opened before; each is fetched and opened before
   the next is fetched, and their records are merged
   (:func:`sealmem.client.sync.apply.apply_versions`) ``MERGE_BATCH`` at a time
   across chunks, so memory is bounded by a batch and a refusal stops further
   fetches;
3. everything a snapshot merges, its chain head, chunk cache and (a full manifest,
   or a base fetched for a delta) the writer's base commit in ONE transaction: a
   refused snapshot merges nothing and does not move the head.

Every failure while handling one object becomes a named :class:`Refusal` of that
object, including errors the protocol did not anticipate (``malformed``); the
rest of the sync goes on.  A transport that fails to fetch one writer's manifest
or chunk (a planted entry the folder cannot read, a hub error for that object)
skips that writer with a warning.  Local storage failures (``sqlite3.Error``,
:class:`~sealmem.protocol.errors.StoreError`) and an unreachable team folder or
hub (:class:`~sealmem.client.sync.transport.Unreachable`) still stop the sync.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Protocol

from ...crypto import SUITE, ContentKey
from ...protocol import reasons
from ...protocol.chunks import SnapshotOpener
from ...protocol.errors import ProtocolError, Rejected, StoreError, TransportError
from ...protocol.hlc import ZERO, Hlc
from ...protocol.manifest import Manifest
from ...protocol.record import Record
from ...protocol.state import TrustedState
from ...protocol.verify import accept_manifest
from ...protocol.witness import Citation
from ..store import scrub
from ..store.connection import describe, transaction
from ..store.memory import Provenance
from . import bases, freshness, holes, replica
from .apply import ApplyResult, apply_versions
from .session import Refusal, Team, trusted_roster
from .transport import ConflictError, Unreachable

__all__ = ["OBJECT_ERRORS", "PullSink", "merge_chunks", "pull_project"]

OBJECT_ERRORS: tuple[type[BaseException], ...] = (
    ProtocolError,
    ValueError,
    UnicodeError,
    TypeError,
    KeyError,
    OverflowError,
    RecursionError,
)
"""Errors that, raised while handling one pulled object, refuse that object only."""


class PullSink(Protocol):
    """Where a pull reports (:class:`~sealmem.client.sync.engine.SyncSummary` is one)."""

    pulled_new: int
    pulled_updated: int
    members: set[str]
    refused: list[Refusal]
    warnings: list[str]
    cited: Citation  # the newest roster a verified manifest cited (freshness)


def pull_project(
    team: Team, state: TrustedState, project: str, summary: PullSink, tick: Callable[[], int]
) -> TrustedState:
    """Pull every teammate's newest snapshot of ``project`` that moved since the last sync;
    return the trusted state with the heads accepted (already committed to the store)."""
    transport = team.transport
    seqs = transport.newest_seqs(project)
    writers = sorted(transport.manifests(project)) if seqs is None else sorted(seqs)
    moved = [
        w
        for w in writers
        if w != team.me
        and not (
            seqs is not None
            and (h := state.head(w, project))
            and seqs[w] == h.seq
            and not replica.holes(team.conn, w, project)
        )
    ]  # (unmoved and read whole: nothing new, the manifest is not read at all)
    newest = freshness.newest_manifests(team, project, moved)
    finder = bases.Finder(team.conn, team.transport)
    state = freshness.learn_floors(state, project, newest, summary, finder)
    for writer in moved:
        state = _pull_writer(team, state, project, writer, summary, tick(), newest, finder)
    return state


def _candidates(
    team: Team, project: str, writer: str, fetched: dict[str, bytes | None]
) -> Iterator[bytes]:
    """The writer's newest manifest, then (only if that one is refused) the older ones."""
    newest = (
        fetched.get(writer)
        if writer in fetched
        else team.transport.newest_manifest(project, writer)
    )
    if newest is not None:
        yield newest
    for data in team.transport.writer_manifests(project, writer):
        if data != newest:
            yield data


def _unexpected(where: str, exc: BaseException) -> str:
    text = str(exc)
    if len(text) > 300:
        text = text[:297] + "..."
    return (
        f"{where} could not be read ({type(exc).__name__}: {text}); it was skipped and "
        "the rest of the sync went on; ask its writer to upgrade sealmem and sync again"
    )


def _pull_writer(
    team: Team,
    state: TrustedState,
    project: str,
    writer: str,
    summary: PullSink,
    now: int,
    fetched: dict[str, bytes | None],
    finder: bases.Finder,
) -> TrustedState:
    where = f"manifest {writer[:8]}/{project}"
    refusal: Refusal | None = None
    try:
        for data in _candidates(team, project, writer, fetched):
            try:
                state = _pull_manifest(team, state, project, writer, data, summary, now, finder)
            except Rejected as exc:
                refusal = refusal or Refusal(exc.reason, where, exc.detail)
            except OBJECT_ERRORS as exc:
                refusal = refusal or Refusal(reasons.MALFORMED, where, _unexpected(where, exc))
            else:
                break
    except (Unreachable, ConflictError):
        raise
    except TransportError as exc:  # this writer's objects only: nothing of it was kept
        summary.warnings.append(
            f"{where} was skipped: {exc}; the rest of the sync went on (sync again later)"
        )
    if refusal is not None:
        summary.refused.append(refusal)
    return state


def _pull_manifest(
    team: Team,
    trusted: TrustedState,
    project: str,
    writer: str,
    data: bytes,
    summary: PullSink,
    now: int,
    finder: bases.Finder,
) -> TrustedState:
    """Accept one manifest envelope and merge its snapshot; raise to refuse it.

    Returns the state with the new head once the snapshot is merged and committed
    (``trusted`` unchanged when there was nothing new or no key yet)."""
    state, listed = accept_manifest(
        SUITE, trusted, data, project=project, writer=writer, rebuild=finder.rebuild
    )
    if state is trusted and not replica.holes(team.conn, writer, project):
        return trusted  # the newest readable one is the one we already trust, read whole
    found = finder.find(listed)  # a delta: its whole chunk list
    manifest = found.manifest
    key = team.content_key(state, project, manifest.epoch)
    if key is None:
        summary.warnings.append(
            f"manifest {writer[:8]}/{project} seq {manifest.seq} uses epoch {manifest.epoch}, "
            "for which this member holds no key; it will be read once the writer re-publishes"
        )
        return trusted
    base = data if manifest.delta is None else found.fetched
    _merge_snapshot(team, state, manifest, key, summary, now, base)
    return state


MERGE_BATCH = 2000
"""Pulled versions merged per :func:`apply_versions` call: the records of several chunks
(a chunk holds ~40 at 10k records), so the per-call statements are paid per batch."""


class _Batch:
    """The opened records of one snapshot's chunks, merged a batch at a time (memory stays
    bounded by a batch; every id is in one bucket, so in one chunk, and once per batch)."""

    def __init__(
        self, conn: sqlite3.Connection, provenance: Provenance, now: int, result: ApplyResult
    ) -> None:
        self.conn, self.provenance, self.now, self.result = conn, provenance, now, result
        self.records: list[Record] = []
        self.ids: set[str] = set()
        self.keys: dict[str, int] = {}
        self.newest = ZERO  # the newest HLC among every record added

    def add(self, records: list[Record], keys: list[int]) -> None:
        """Add one chunk's records and their bucket keys (the opener computed them)."""
        ids = {r.id for r in records}
        if not self.ids.isdisjoint(ids):
            self.flush()  # never the case for an accepted snapshot; keep the order anyway
        self.records.extend(records)
        self.ids |= ids
        self.newest = max([self.newest, *(r.hlc for r in records)])
        self.keys.update(zip((r.id for r in records), keys, strict=True))
        if len(self.records) >= MERGE_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.records:
            self.result.add(
                apply_versions(self.conn, self.records, self.provenance, self.now, self.keys)
            )
        self.records, self.ids, self.keys = [], set(), {}


def merge_chunks(
    team: Team,
    m: Manifest,
    key: ContentKey,
    provenance: Provenance,
    now: int,
    opened: dict[str, int],
    result: ApplyResult,
) -> tuple[SnapshotOpener, Hlc]:
    """Fetch, open and merge (into ``result``) the chunks of the accepted manifest ``m`` not
    in ``opened`` (its chunk cache), one at a time, inside the caller's transaction; return
    the opener (its holes: the chunks that could not be read) and the newest HLC merged."""
    opener = SnapshotOpener(SUITE, key, m, now_ms=now, opened=opened)
    batch = _Batch(team.conn, provenance, now, result)
    for ref in opener.needed:
        data = team.transport.chunk(m.project, m.writer, ref.id)
        try:
            if data is None:
                raise opener.missing(ref)
            batch.add(opener.feed(ref, data), opener.keys)
        except Rejected as exc:  # the transport's loss is a hole; the rest is read
            opener.hole(ref, exc)
    batch.flush()
    return opener, batch.newest


def _merge_snapshot(
    team: Team,
    state: TrustedState,
    m: Manifest,
    key: ContentKey,
    summary: PullSink,
    now: int,
    base: bytes | None,
) -> None:
    """Fetch, open and merge the chunks of ``m`` not opened before, in one transaction
    that also keeps ``base`` (a full manifest envelope) as the writer's new base."""
    head = state.head(m.writer, m.project)
    if head is None:
        raise StoreError(f"accepted manifest of {m.writer}/{m.project} left no chain head")
    member = trusted_roster(state).member(m.writer)
    provenance = Provenance(
        transport=team.transport.kind,
        signer=m.writer,
        signer_name=None if member is None else member.name,
        verified=True,
        received_at=now,
        snapshot_seq=m.seq,
    )
    result = ApplyResult()
    try:
        with transaction(team.conn):
            opened = replica.chunk_cache(team.conn, m.writer, m.project)
            opener, _ = merge_chunks(team, m, key, provenance, now, opened, result)
            replica.save_head(
                team.conn, m.writer, m.project, head, epoch=m.epoch, buckets=m.buckets,
                chunks=opener.finish(), records=m.records, created_at=m.created_at, now=now,
                missing=[h.ref.id for h in opener.holes],
            )  # fmt: skip
            replica.save_witnessed(team.conn, state.witnessed)
            if base is not None:
                bases.save(team.conn, m.writer, m.project, base, now)
    except sqlite3.Error as exc:  # the local store, not the snapshot: stop the sync
        raise StoreError(
            f"the local store failed while merging the snapshot of {m.writer}/{m.project} "
            f"seq {m.seq}, and kept nothing of it: {describe(team.store.path, exc)}"
        ) from exc
    if result.purged:  # a tombstone won: wipe the forgotten text from the files too
        try:
            scrub.settle(team.conn)
        except sqlite3.Error as exc:
            raise StoreError(
                f"merged the snapshot of {m.writer}/{m.project} seq {m.seq}, but wiping the "
                f"text of forgotten memories from the store's files failed ({exc}); run "
                "'sealmem doctor', then sync again"
            ) from exc
    holes.report(team, m, opener.holes, summary)
    summary.pulled_new += result.new
    summary.pulled_updated += result.updated
    summary.warnings.extend(result.skipped)
    if result.redacted:
        summary.warnings.append(
            f"redacted what looked like secrets in {result.redacted} memories from "
            f"{provenance.signer_name or m.writer}; "
            "ask them to check their memories (newer sealmem redacts before pushing)"
        )
    if result.new or result.updated:
        summary.members.add(m.writer)
