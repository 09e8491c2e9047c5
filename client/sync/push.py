"""The push of one project: gather, decide, build, push, save.

1. **gather**, I/O only (:func:`~sealmem.client.sync.own_chain.own_heads`, read once
   already by this sync's own-chain step): our last manifest as the store recorded it and
   the base it keeps; what the transport holds of ours (our newest manifests when it
   lists one above the recorded seq, the copies of the bases our deltas name, what it lost);
2. **decide**, in :mod:`sealmem.protocol` with pure functions: which head is ours
   (:func:`~sealmem.protocol.own.ours`), whether the own-chain table still says publish
   (:func:`~sealmem.protocol.own_chain.decide`: a head that appeared during this sync
   is ``key-in-use``) and the lowest seq, whether to repair, then, over one consistent
   read of the store, the plan (:func:`~sealmem.protocol.push.plan_push`: skip, adopt,
   continue or start a chain) and what of the base it reuses
   (:func:`~sealmem.protocol.push.plan_reuse`);
3. **build** the snapshot from the records of the buckets it rebuilds, record its
   (seq, hash) before sending (an interrupted push is then still ours), **push** it (the
   new chunks, then the manifest), and **save** the new chain head, with a base read
   from the transport.  Old chunks are collected
   after the grace period.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from ...crypto import SUITE, ContentKey, random_bytes
from ...protocol.errors import Rejected
from ...protocol.hlc import ZERO, Hlc
from ...protocol.manifest import Head
from ...protocol.merge import DEFAULT_GRACE_MS, collect_tombstones
from ...protocol.own import Damage, Ours
from ...protocol.own_chain import BEHIND_WITNESS, PUBLISH
from ...protocol.push import (
    Publishable,
    PushPlan,
    plan_push,
    plan_reuse,
)
from ...protocol.record import Record
from ...protocol.snapshot import PreviousSnapshot, Rebuild, Snapshot, build_snapshot
from ...protocol.state import TrustedState
from ..store.connection import transaction
from . import bases, outgoing, own_chain, redaction, replica
from .session import Refusal, Team, trusted_roster
from .transport import ConflictError, MissingChunks

__all__ = ["PushSink", "push_project", "redact_pending"]


class PushSink(Protocol):
    """Where a push reports (:class:`~sealmem.client.sync.engine.SyncSummary` is one)."""

    pushed_versions: int
    pushed_chunks: int
    collected_chunks: int
    refused: list[Refusal]
    warnings: list[str]


def redact_pending(team: Team, project: str, now: int) -> None:
    """Redact again, in its own transaction, what the next push would publish for the
    first time (newer rules may catch a secret an older sealmem let in)."""
    chain = replica.load_own_chain(team.conn, project)
    since = chain.pushed_wall if chain else ZERO
    if not redaction.needs_redaction(team.conn, team.me, project, since):
        return  # every version it would look at is marked: no write transaction
    with transaction(team.conn):
        redaction.redact_pending(team.conn, team.me, project, since, now)


def push_project(
    team: Team, state: TrustedState, project: str, summary: PushSink, tick: Callable[[], int],
    heads: Ours | None = None,
) -> None:  # fmt: skip
    """Push ``project`` with its current content key; when the transport says our seq is
    stale, read our newest chain back and push again, once.  ``heads``: what this sync
    read of our own chain (:func:`~.own_chain.read_own_chains`; None: read it here)."""
    key = _content_key(team, state, project, summary)
    if key is None:
        return
    try:
        _push_healing(team, state, project, key, summary, tick, heads)
    except ConflictError as first:
        try:
            _push_healing(team, state, project, key, summary, tick)
        except ConflictError as second:
            summary.warnings.append(
                f"push to {project!r} refused twice as stale ({first.detail}; {second.detail}); "
                "another device may be writing with this member key — sync again"
            )


def _push_healing(
    team: Team, state: TrustedState, project: str, key: ContentKey, summary: PushSink,
    tick: Callable[[], int], heads: Ours | None = None,
) -> None:  # fmt: skip
    """Push; when the transport refuses the manifest for chunks it does not hold (it lost
    them), encrypt those buckets again and push at once, the same seq (SPEC "Self-repair")."""
    try:
        _push(team, state, project, key, summary, tick(), heads=heads)
    except MissingChunks as exc:
        try:
            _push(team, state, project, key, summary, tick(), lost=exc.ids)
        except MissingChunks as again:
            summary.warnings.append(
                f"push to {project!r} refused twice for chunks the transport does not hold "
                f"({len(again.ids)} after repairing {len(exc.ids)}); sync again"
            )


def _content_key(
    team: Team, state: TrustedState, project: str, summary: PushSink
) -> ContentKey | None:
    """Our content key for the project's current epoch; None (said in ``summary``) when
    we hold none yet or its wrap does not match the keyring's key_id (never write then)."""
    epoch = trusted_roster(state).projects[project]
    try:
        key = team.content_key(state, project, epoch)
    except Rejected as exc:
        summary.refused.append(Refusal(exc.reason, f"keyring {project}", exc.detail))
        return None
    if key is None:
        summary.warnings.append(
            f"no key for {project!r} epoch {epoch} yet; not pushing (sync again later)"
        )
    return key


def _damage(
    team: Team, project: str, chain: replica.OwnChain | None, heads: Ours, lost: frozenset[str]
) -> Damage:
    """What the transport lost of our last publication (see :class:`Damage`); ``lost``: the
    chunks it said it does not hold when it refused our manifest."""
    own = heads.own
    if own is None or chain is None:
        return Damage()
    transport, me = team.transport, team.me
    listed = [c.id for c in own.manifest.chunks]
    chunks = transport.damaged_chunks(project, me, listed) | lost.intersection(listed)
    base = heads.keep or bases.load(team.conn, me, project)
    return Damage(
        frozenset(chunks),
        transport.damaged_manifest(project, me, chain.seq, chain.manifest),
        own.full is not None
        and base is not None
        and transport.damaged_manifest(project, me, own.full[0].seq, base),
    )


@dataclass(frozen=True, slots=True)
class _Next:
    """What the next push publishes, read from the store in one transaction."""

    plan: PushPlan
    records: list[Record]  # sorted by id, due tombstones left out
    previous: PreviousSnapshot | None
    rebuild: Rebuild | None
    upto: int  # the dirty log position the push clears once it landed
    count: int  # publishable versions (due tombstones included)
    newest: Hlc  # the newest HLC among them


def _next(
    team: Team, state: TrustedState, project: str, chain: replica.OwnChain | None,
    heads: Ours, damage: Damage, now: int,
) -> _Next:  # fmt: skip
    """Plan the push over one consistent read of the store (call inside a transaction)."""
    roster = trusted_roster(state)
    conn, me = team.conn, team.me
    if heads.keep is not None:  # what the next delta is listed against: keep it
        bases.save(conn, me, project, heads.keep, now)
    outgoing.fill_bucket_keys(conn, project)
    count, newest, due = replica.own_summary(conn, me, project, now - DEFAULT_GRACE_MS)
    reset = roster.latest_reset(me, project)
    seen = state.witnessed.get((me, project))
    epoch = roster.projects[project]
    plan = plan_push(
        project=project, own=heads.own, landed=heads.landed, epoch=epoch,
        reset_at=0 if reset is None else reset.at_version,
        witnessed_seq=0 if seen is None else seen.seq,
        publishable=Publishable(count, newest, due), now_ms=now, repair=damage.repairs(heads),
    )  # fmt: skip
    if plan.skip is not None:
        outgoing.compact_dirty(conn, project)
        return _Next(plan, [], None, None, 0, count, newest)
    upto = outgoing.dirty_upto(conn, project)  # what this push carries
    dirty = (
        outgoing.dirty_since(conn, me, project, now, DEFAULT_GRACE_MS).keys
        if plan.base is not None
        else frozenset()
    )
    previous, rebuild = plan_reuse(
        plan, epoch=epoch, published=count - due, digests=chain.digests if chain else {},
        dirty=dirty, damaged=damage.chunks,
    )  # fmt: skip
    if rebuild is None:
        current = replica.publishable_records(conn, me, project)
    else:
        current = outgoing.records_in_buckets(
            conn, me, project, rebuild.buckets, rebuild.buckets_total
        )
    kept = collect_tombstones({r.id: r for r in current}, now)
    records = sorted(kept.values(), key=lambda r: r.id)
    return _Next(plan, records, previous, rebuild, upto, count, newest)


def _push(
    team: Team, state: TrustedState, project: str, key: ContentKey, summary: PushSink, now: int,
    lost: frozenset[str] = frozenset(), heads: Ours | None = None,
) -> None:  # fmt: skip
    """Gather, decide, build, push, save (see the module docstring)."""
    roster = trusted_roster(state)
    epoch = roster.projects[project]
    chain = replica.load_own_chain(team.conn, project)
    if heads is None:
        heads = own_chain.own_heads(team, project, chain)
    # read back before this sync's pushes: what moved since was written by another machine
    step = own_chain.decide_for(team, state, project, chain, heads, adopted=True)
    if step.action == BEHIND_WITNESS:
        seen = state.witnessed[(team.me, project)].seq
        summary.warnings.append(own_chain.withheld_line(project, seen, team.transport.location))
        return
    if step.action != PUBLISH:
        raise own_chain.KeyInUse([project])
    damage = _damage(team, project, chain, heads, lost)
    with transaction(team.conn):
        up = _next(team, state, project, chain, heads, damage, now)
    summary.warnings.extend(up.plan.warnings)
    if up.plan.skip is not None:
        return
    plan = replace(up.plan, seq=max(up.plan.seq, step.next_seq))  # above every seq known
    up = replace(up, plan=plan)
    snap = build_snapshot(
        SUITE, key, team.key, team=team.config.team, project=project, epoch=epoch,
        roster_version=roster.version, seq=plan.seq, prev=plan.prev, records=up.records,
        random=random_bytes, heads=[
            Head(w, p, h.seq, h.hash) for (w, p), h in state.heads.items() if p == project
        ],
        created_at=now, previous=up.previous, only=up.rebuild, listing=plan.listing,
    )  # fmt: skip
    if not plan.publishes(snap.manifest):  # nothing changed since our last manifest
        with transaction(team.conn):
            outgoing.clear_dirty(team.conn, project, up.upto)
        return
    sent = snap.hash or snap.manifest.hash(SUITE)
    with transaction(team.conn):  # durable before the transport sees it
        own_chain.record_send(team.conn, project, plan.seq, sent, now)
    try:
        team.transport.push(project, team.me, plan.seq, snap.envelope, snap.new_chunks)
    except (ConflictError, MissingChunks):  # refused: it holds another manifest, or none
        with transaction(team.conn):
            own_chain.drop_send(team.conn, project, plan.seq, sent)
        raise
    _save(team, project, up, snap, now)
    summary.pushed_versions += sum(1 for r in up.records if r.hlc > plan.pushed)
    summary.pushed_chunks += len(snap.new_chunks)
    summary.collected_chunks += team.transport.collect(
        project, team.me, set(snap.chunk_ids()), team.config.gc_grace_ms
    )


def _save(team: Team, project: str, up: _Next, snap: Snapshot, now: int) -> None:
    """Record the new chain head once the transport took it: the push's only write."""
    plan, conn = up.plan, team.conn
    newest = max(max((r.hlc for r in up.records), default=plan.pushed), up.newest)
    head = replica.OwnChain(
        project, plan.seq, snap.hash or snap.manifest.hash(SUITE), snap.envelope,
        dict(snap.digests), max(newest, plan.pushed), up.count, plan.reset_at,
    )  # fmt: skip
    with transaction(conn):
        replica.save_own_chain(conn, head, now)
        if snap.manifest.delta is None:  # the next deltas are listed against this one
            bases.save(conn, team.me, project, snap.envelope, now)
        outgoing.clear_dirty(conn, project, up.upto)
