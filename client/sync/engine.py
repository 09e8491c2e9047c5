"""The sync engine: pull and verify teammates' snapshots, merge them, push our own.

One :func:`sync` run, under an exclusive lock on ``<home>/sync.lock`` so that
two syncs of one store never interleave:

1. **refresh**: new roster versions (chain from the pinned root), then keyrings;
2. **pull**, per readable project and writer whose newest manifest moved:
   verify the manifest (grant, chain, rollback, fork, witnesses), then fetch,
   open and merge the chunks not already opened one at a time, with provenance
   (:mod:`sealmem.client.sync.pull`).  A snapshot's merged versions, chain head
   and chunk cache commit in one transaction: a refused snapshot merges nothing;
3. **push**, per writable project: first the versions not pushed yet are
   redacted again (their own transaction); then the push is planned from values
   (:func:`~sealmem.protocol.push.plan_push`) and carried out: publishable
   winners (never private ones) bucketed into a snapshot that reuses unchanged
   chunks; the new chunks then the manifest go to the transport, then the new
   chain head is recorded locally (the push's only write to the store).  Old
   chunks are collected after the grace period;
4. **local only**: per project whose team memories of ours are not pushed (no
   write grant, unregistered project, revoked, not approved yet), one warning
   with the count, why and the fix (:mod:`sealmem.client.sync.local_only`).

Refused objects are logged with their named reason and counted in the summary;
they never stop the sync.  Failures that do (unreachable folder, bad local
state, a full disk) raise :class:`~sealmem.protocol.errors.SealmemError`: a
``sqlite3.Error`` becomes a :class:`~sealmem.protocol.errors.StoreError` that
says what happened and the fix; every step commits in its own transaction, so
a sync stopped part way loses nothing and the next one carries on.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock

from ...crypto import SUITE, random_bytes
from ...protocol import hubapi, reasons
from ...protocol.bases import rebuild
from ...protocol.envelope import unpack
from ...protocol.errors import Rejected, SealmemError, StoreError
from ...protocol.hlc import ZERO
from ...protocol.manifest import Head, Manifest
from ...protocol.merge import DEFAULT_GRACE_MS, collect_tombstones
from ...protocol.push import (
    Landed,
    OwnHead,
    Publishable,
    needs_transport_read,
    plan_push,
    plan_rebuild,
    writable_projects,
)
from ...protocol.roster import Roster
from ...protocol.snapshot import PreviousSnapshot, build_snapshot
from ...protocol.state import TrustedState
from ...protocol.verify import MAX_MANIFEST_BYTES
from ..clock import now_ms
from ..store.connection import sqlite_errors, transaction
from . import bases, clockhealth, dropping, outgoing, replica
from .local_only import LocalOnly, local_only
from .pull import pull_project
from .session import Refusal, Team, trusted_roster
from .transport import ConflictError

__all__ = ["LOCK_FILE", "LOCK_TIMEOUT_S", "SyncSummary", "sync", "sync_lock"]

LOCK_FILE = "sync.lock"
LOCK_TIMEOUT_S = 120.0


@contextlib.contextmanager
def sync_lock(home_dir: Path, timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the exclusive sync lock of a sealmem home (an OS file lock, on any platform)."""
    path = Path(home_dir) / LOCK_FILE
    lock = filelock.FileLock(path, timeout=timeout_s, mode=0o600, thread_local=False)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise StoreError(
            f"another sync of {home_dir} has held {path} for over {timeout_s:.0f} s; "
            "wait for it to finish (or stop 'sealmem sync --watch') and retry"
        ) from None
    except OSError as exc:
        raise StoreError(
            f"cannot lock {path}: {exc.strerror or exc}; check that {home_dir} is writable"
        ) from exc
    try:
        yield
    finally:
        lock.release()


def _count(n: int, noun: str) -> str:
    """``1 version``, ``2 versions``, ``0 versions``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass
class SyncSummary:
    """What one sync did; :meth:`line` is the one-line summary the CLI prints."""

    pushed_versions: int = 0
    pushed_chunks: int = 0
    pulled_new: int = 0
    pulled_updated: int = 0
    members: set[str] = field(default_factory=set)
    refused: list[Refusal] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    collected_chunks: int = 0
    local_only: list[LocalOnly] = field(default_factory=list)  # team memories not pushed

    def line(self) -> str:
        counts = Counter(r.reason for r in self.refused)
        why = ", ".join(f"{reason} x{n}" for reason, n in sorted(counts.items()))
        return (
            f"pushed {_count(self.pushed_versions, 'version')} in "
            f"{_count(self.pushed_chunks, 'chunk')}; "
            f"pulled {self.pulled_new} new + {self.pulled_updated} updated from "
            f"{_count(len(self.members), 'member')}; "
            f"refused {_count(len(self.refused), 'object')}" + (f": {why}" if why else "")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "pushed_versions": self.pushed_versions,
            "pushed_chunks": self.pushed_chunks,
            "pulled_new": self.pulled_new,
            "pulled_updated": self.pulled_updated,
            "members": sorted(self.members),
            "refused": [
                {"reason": r.reason, "object": r.object, "detail": r.detail} for r in self.refused
            ],
            "warnings": list(self.warnings),
            "collected_chunks": self.collected_chunks,
            "local_only": [entry.to_dict() for entry in self.local_only],
            "summary": self.line(),
        }


def sync(
    team: Team, *, clock: Callable[[], int] | None = None, push: bool = True, pull: bool = True
) -> SyncSummary:
    """Run one sync of ``team`` (see the module docstring); return its summary."""
    tick = clock or now_ms
    summary = SyncSummary()
    with sync_lock(team.home):
        started = tick()
        try:
            with sqlite_errors(team.store.path):  # disk full, read-only, I/O: one sentence
                _run(team, summary, tick, started, push=push, pull=pull)
        except SealmemError as exc:
            summary.warnings += team.transport.take_warnings()
            # Stopped part way (folder gone, hub down): keep what was learnt, say why;
            # a store too broken to record it must not hide the original error.
            with contextlib.suppress(SealmemError, sqlite3.Error):
                clockhealth.note(team.conn, team.transport, tick())
                _record(team, summary, started, tick(), error=str(exc))
            raise
        summary.warnings += team.transport.take_warnings()
        with sqlite_errors(team.store.path):
            if (clock_off := clockhealth.note(team.conn, team.transport, tick())) is not None:
                summary.warnings.append(clock_off)
            _record(team, summary, started, tick())
    return summary


def _run(
    team: Team,
    summary: SyncSummary,
    tick: Callable[[], int],
    started: int,
    *,
    push: bool,
    pull: bool,
) -> None:
    state, refused = team.refresh(team.trusted(), started)
    summary.refused += refused
    roster = state.roster
    if roster is None or roster.member(team.me) is None:
        summary.warnings.append(_not_a_member(team.join_status(state)))
        _note_local_only(team, roster, summary)
        return
    if replica.pushes_as(team.conn) != team.me:  # the dirty log keeps only our rows
        with transaction(team.conn):
            replica.claim_pushes(team.conn, team.me)
    if pull:
        state = _purge_revoked(team, state, roster, summary, tick())
        for project in sorted(roster.projects):
            if roster.can_read(team.me, project):
                state = pull_project(team, state, project, summary, tick)
    revoked = roster.revocation(team.me)
    if push and revoked is not None:
        summary.warnings.append(
            f"this member was revoked from the team in roster v{revoked.at_version}: "
            "nothing is pushed, and teammates refuse what it writes; ask an admin"
        )
    elif push:
        for project in writable_projects(roster, team.me):
            _redact_pending(team, project, tick())
            _push_with_retry(team, state, project, summary, tick)
        with transaction(team.conn):
            outgoing.drop_unused_dirty(team.conn)
    _note_local_only(team, roster, summary)


def _note_local_only(team: Team, roster: Roster | None, summary: SyncSummary) -> None:
    """One warning per project whose team memories of ours stay here, with the count."""
    summary.local_only = local_only(team.conn, roster, team.me)
    summary.warnings += [entry.message() for entry in summary.local_only]


def _not_a_member(join_status: str | None) -> str:
    if join_status == hubapi.REQUEST_PENDING:
        return (
            "waiting for an admin to approve the join request (the hub holds it; nothing "
            "of the team is read until then): ask an admin to run 'sealmem admin approve'"
        )
    if join_status == hubapi.REQUEST_UNKNOWN:
        return (
            "the hub holds no join request from this member: an admin rejected it, or it "
            "expired unhandled; ask an admin, then join again"
        )
    return "not a member of the trusted roster yet: an admin must approve the join request"


def _record(
    team: Team, summary: SyncSummary, started: int, finished: int, error: str | None = None
) -> None:
    """Log the refusals and the run, also for a sync that stopped part way."""
    doc = summary.to_dict()
    if error is not None:
        doc["error"] = error
    with transaction(team.conn):
        for r in summary.refused:
            replica.log_refusal(team.conn, finished, r.reason, r.object, r.detail)
        replica.record_run(team.conn, started, finished, doc)


# -- pull ----------------------------------------------------------------------------


def _purge_revoked(
    team: Team, state: TrustedState, roster: Roster, summary: SyncSummary, now: int
) -> TrustedState:
    """Before pulling: drop far-ahead versions and those newly revoked writers may no longer
    hold here, bring the store clock back, stamp our own far-ahead versions again.

    Every drop keeps the versions written by someone else: the best remaining one wins
    again (``protocol.revocation``).  Returns ``state`` without the chain heads that
    were past a revocation pin (the pull then accepts the pinned manifest again).
    """
    if not dropping.pending(team.conn, roster, now):
        return state
    with transaction(team.conn):
        ahead = dropping.drop_far_ahead(team.conn, now, me=team.me, roster=roster)
        revoked = dropping.drop_revoked(team.conn, roster, team.me, now)
    if ahead.affected or ahead.clock is not None:
        parts = [
            f"dropped {ahead.affected} pulled versions dated more than 2 days ahead "
            f"({ahead.restored} memories back to an earlier version)"
        ]
        if ahead.restamped:
            parts.append(f"{ahead.restamped} of ours stamped again with the current time")
        if ahead.still_ahead:
            parts.append("the store clock is still more than 2 days ahead: check this clock")
        elif ahead.clock is not None:
            parts.append("the store clock was brought back")
        summary.warnings.append("; ".join(parts))
    if revoked.affected:
        summary.warnings.append(
            f"dropped the versions of revoked members from {revoked.affected} memories: "
            f"{revoked.restored} back to a teammate's version, {revoked.removed} only they "
            "wrote moved to history"
        )
    if not revoked.rewound:
        return state
    gone = set(revoked.rewound)
    return state.evolve(heads={k: h for k, h in state.heads.items() if k not in gone})


# -- push ----------------------------------------------------------------------------


def _own_newest(team: Team, project: str, now: int) -> Landed | None:
    """The newest manifest of ours in the transport that verifies under our key (a delta
    rebuilt from its base; one whose base cannot be found is passed over)."""
    for data in team.transport.writer_manifests(project, team.me):
        try:
            env = unpack(data, what="manifest", max_bytes=MAX_MANIFEST_BYTES)
            env.check(SUITE, "manifest", team.key.sign_public)
            manifest = Manifest.from_body(env.body)
            if manifest.writer != team.me or manifest.project != project:
                continue
            found = bases.find(team.conn, team.transport, manifest)
        except Rejected:
            continue
        if found.fetched is not None:  # what the next delta is listed against: keep it
            with transaction(team.conn):
                bases.save(team.conn, team.me, project, found.fetched, now)
        return Landed(found.manifest, manifest.hash(SUITE), _full_of(team, found.manifest))
    return None


def _full_of(team: Team, manifest: Manifest) -> tuple[Manifest, str] | None:
    """The full manifest a (rebuilt) delta of ours is listed against, as kept here."""
    if manifest.delta is None:
        return None
    data = bases.load(team.conn, team.me, manifest.project)
    if data is None:
        return None
    base = bases.parsed(data)
    return base if base[1] == manifest.delta.base_hash else None


def _redact_pending(team: Team, project: str, now: int) -> None:
    """Redact again, in its own transaction, what the next push would publish for the
    first time (newer rules may catch a secret an older sealmem let in)."""
    chain = replica.load_own_chain(team.conn, project)
    since = chain.pushed_wall if chain else ZERO
    if not replica.needs_redaction(team.conn, team.me, project, since):
        return  # every version it would look at is marked: no write transaction
    with transaction(team.conn):
        replica.redact_pending(team.conn, team.me, project, since, now)


def _push_with_retry(
    team: Team,
    state: TrustedState,
    project: str,
    summary: SyncSummary,
    tick: Callable[[], int],
) -> None:
    """Push; when the transport says our seq is stale, read our newest chain back and retry."""
    try:
        _push_project(team, state, project, summary, tick())
    except ConflictError as first:
        try:
            _push_project(team, state, project, summary, tick())
        except ConflictError as second:
            summary.warnings.append(
                f"push to {project!r} refused twice as stale ({first.detail}; {second.detail}); "
                "another device may be writing with this member key — sync again"
            )


@functools.lru_cache(maxsize=16)
def _own_manifest(data: bytes) -> Manifest:
    """Our last manifest as recorded locally, parsed once per process (it holds one ref per
    bucket, up to 1,024, and is read at every sync; a Manifest is immutable)."""
    return Manifest.from_body(unpack(data, what="manifest", max_bytes=MAX_MANIFEST_BYTES).body)


@functools.lru_cache(maxsize=16)
def _own_rebuilt(data: bytes, base: bytes) -> Manifest:
    """Our last manifest, a delta, rebuilt from the base kept here: once per process."""
    return rebuild(SUITE, _own_manifest(data), [bases.parsed(base)])


def _own_head(
    team: Team, chain: replica.OwnChain | None, now: int, landed: Landed | None = None
) -> OwnHead | None:
    """Our last manifest as recorded here (a delta rebuilt from its base).  When a newer
    manifest of ours ``landed`` in the transport (a store restored from an old backup, a
    device left behind), the push builds on that one: a recorded delta whose base is gone
    everywhere is then kept as parsed, its chunk list unused."""
    if chain is None:
        return None
    manifest = _own_manifest(chain.manifest)
    full = None
    if manifest.delta is not None:
        kept = bases.load(team.conn, team.me, chain.project)
        try:
            if kept is None:
                raise Rejected(reasons.MISSING_BASE, "this store keeps no base")
            manifest, full = _own_rebuilt(chain.manifest, kept), bases.parsed(kept)
        except Rejected:  # not kept here (or damaged): the transport's copy
            try:
                found = bases.find(team.conn, team.transport, manifest)
            except Rejected as exc:
                if landed is not None and landed.manifest.seq > chain.seq:
                    return OwnHead(
                        manifest, chain.hash, chain.pushed_wall, chain.pushed_count,
                        chain.reset_at,
                    )  # fmt: skip
                raise StoreError(
                    f"our last manifest of {chain.project!r} (seq {chain.seq}) is a delta "
                    f"whose base this store and the transport lost ({exc.detail}); run "
                    "'sealmem doctor'"
                ) from exc
            manifest = found.manifest
            if found.fetched is not None:
                full = bases.parsed(found.fetched)
                with transaction(team.conn):
                    bases.save(team.conn, team.me, chain.project, found.fetched, now)
    return OwnHead(
        manifest, chain.hash, chain.pushed_wall, chain.pushed_count, chain.reset_at, full
    )


def _push_project(
    team: Team, state: TrustedState, project: str, summary: SyncSummary, now: int
) -> None:
    """Plan the push (:func:`plan_push`) and carry it out; the only write to the store is
    the new own chain head, recorded after the transport took the manifest."""
    roster = trusted_roster(state)
    epoch = roster.projects[project]
    try:
        key = team.content_key(state, project, epoch)
    except Rejected as exc:  # the wrap does not match the keyring's key_id: never write
        summary.refused.append(Refusal(exc.reason, f"keyring {project}", exc.detail))
        return
    if key is None:
        summary.warnings.append(
            f"no key for {project!r} epoch {epoch} yet; not pushing (sync again later)"
        )
        return
    chain = replica.load_own_chain(team.conn, project)
    listed = team.transport.newest_seqs(project)
    landed = None
    listed_seq = None if listed is None else listed.get(team.me, 0)
    if needs_transport_read(chain.seq if chain else 0, listed_seq):
        landed = _own_newest(team, project, now)
    reset = roster.latest_reset(team.me, project)
    seen = state.witnessed.get((team.me, project))
    own = _own_head(team, chain, now, landed)
    damaged = (
        set()
        if own is None
        else team.transport.damaged_chunks(project, team.me, [c.id for c in own.manifest.chunks])
    )
    # A manifest of ours (or the base our delta is listed against) damaged or gone in the
    # folder: publish the snapshot again, as a full manifest.
    base_data = bases.load(team.conn, team.me, project) if own and own.full else None
    repair = bool(damaged) or (
        chain is not None
        and landed is None
        and (
            team.transport.damaged_manifest(project, team.me, chain.seq, chain.manifest)
            or (
                own is not None
                and own.full is not None
                and base_data is not None
                and team.transport.damaged_manifest(project, team.me, own.full[0].seq, base_data)
            )
        )
    )
    with transaction(team.conn):  # one consistent read of what we publish
        outgoing.fill_bucket_keys(team.conn, project)
        count, newest, due = replica.own_summary(
            team.conn, team.me, project, now - DEFAULT_GRACE_MS
        )
        plan = plan_push(
            project=project, own=own, landed=landed, epoch=epoch,
            reset_at=0 if reset is None else reset.at_version,
            witnessed_seq=0 if seen is None else seen.seq,
            publishable=Publishable(count, newest, due), now_ms=now, repair=repair,
        )  # fmt: skip
        if plan.skip is not None:
            summary.warnings.extend(plan.warnings)
            outgoing.compact_dirty(team.conn, project)
            return
        upto = outgoing.dirty_upto(team.conn, project)  # what this push carries
        previous = None
        rebuild = None
        if plan.base is not None:
            dirty = outgoing.dirty_since(team.conn, team.me, project, now, DEFAULT_GRACE_MS)
            digests = chain.digests if plan.adopt is None and chain is not None else {}
            lost = {c.bucket for c in plan.base.chunks if c.id in damaged}  # encrypted again
            previous = PreviousSnapshot(
                plan.base, {b: d for b, d in digests.items() if b not in lost}
            )
            rebuild = plan_rebuild(
                plan, epoch=epoch, published=count - due, digests=previous.digests,
                dirty=dirty.keys, lost=lost,
            )  # fmt: skip
        if rebuild is None:
            current = replica.publishable_records(team.conn, team.me, project)
        else:
            current = outgoing.records_in_buckets(
                team.conn, team.me, project, rebuild.buckets, rebuild.buckets_total
            )
    summary.warnings.extend(plan.warnings)
    kept = collect_tombstones({r.id: r for r in current}, now).kept
    records = sorted(kept.values(), key=lambda r: r.id)
    heads = [Head(w, p, h.seq, h.hash) for (w, p), h in state.heads.items() if p == project]
    snap = build_snapshot(
        SUITE, key, team.key, team=team.config.team, project=project, epoch=epoch,
        roster_version=roster.version, seq=plan.seq, prev=plan.prev, records=records,
        random=random_bytes, heads=heads, created_at=now, previous=previous, only=rebuild,
        listing=plan.listing,
    )  # fmt: skip
    if not plan.publishes(snap.manifest):  # nothing changed since our last manifest
        with transaction(team.conn):
            outgoing.clear_dirty(team.conn, project, upto)
        return
    team.transport.push(project, team.me, plan.seq, snap.envelope, snap.new_chunks)
    newest_pushed = max(max((r.hlc for r in records), default=plan.pushed), newest)
    with transaction(team.conn):
        replica.save_own_chain(
            team.conn,
            replica.OwnChain(
                project, plan.seq, snap.hash or snap.manifest.hash(SUITE), snap.envelope,
                dict(snap.digests), max(newest_pushed, plan.pushed), count, plan.reset_at,
            ),
            now,
        )  # fmt: skip
        if snap.manifest.delta is None:  # the next deltas are listed against this one
            bases.save(team.conn, team.me, project, snap.envelope, now)
        outgoing.clear_dirty(team.conn, project, upto)
    summary.pushed_versions += sum(1 for r in records if r.hlc > plan.pushed)
    summary.pushed_chunks += len(snap.new_chunks)
    summary.collected_chunks += team.transport.collect(
        project, team.me, set(snap.chunk_ids()), team.config.gc_grace_ms
    )
