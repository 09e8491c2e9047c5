"""Private memories follow the member (SPEC.md "Private memories and trust follow the
member"): the member keyring, this device's private chains, its siblings' pulled.

Runs at the end of a sync, only while this device's member has another unrevoked
device (:func:`~sealmem.protocol.private.publishes_private`); a member with one
machine publishes nothing private.  Per sync:

1. the member keyrings in the private space are accepted
   (:func:`~sealmem.protocol.private.accept_member_keyring`); when the roster lists a
   device the current one does not wrap, the key is wrapped to it too; when the current
   one wraps a device revoked since (or there is none), a new epoch is made, before
   anything private is published;
2. each sibling device's private chain of each project is accepted
   (:func:`~sealmem.protocol.private.accept_private_manifest`), opened with the member
   key of its epoch and merged with provenance naming that device; the records stay
   ``private`` and never enter a team snapshot (those carry team records only);
3. per project where this device wrote private records that changed since its last
   private push, a full private snapshot is pushed under the current epoch;
4. trust decisions: each sibling's (:mod:`~sealmem.protocol.private_trust`) are merged
   per teammate, last writer wins; ours are published when they changed.

What it trusts (:class:`~sealmem.protocol.private.PrivateState`) and the head of its
own private chains live in the store's ``meta`` table.  A refused object is logged by
name and the rest goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ...crypto import SUITE, ContentKey, random_bytes
from ...protocol import canonical
from ...protocol.chunks import open_snapshot
from ...protocol.envelope import unpack
from ...protocol.errors import Rejected
from ...protocol.keyring import MAX_KEYRING_BYTES
from ...protocol.own import own_manifest
from ...protocol.private import (
    MemberKeyring,
    PrivateState,
    accept_member_keyring,
    accept_private_manifest,
    build_member_keyring,
    keyring_plan,
    member_devices,
    publishes_private,
)
from ...protocol.private_trust import TrustEntry, accept_trust, open_trust, seal_trust
from ...protocol.roster import Roster
from ...protocol.snapshot import build_snapshot
from ...protocol.state import TrustedState
from ..store.connection import get_meta, set_meta, transaction
from ..store.memory import Provenance
from ..store.rows import RECORD_COLUMNS, record_from_values
from ..store.trust_rows import decisions_here, merge_decision
from .apply import apply_versions
from .pull import OBJECT_ERRORS, PullSink
from .session import Refusal, Team
from .transport import ConflictError, Transport

__all__ = ["sync_private"]

_STATE = "private_state"  # meta key: PrivateState.to_wire()
_OWN = "private_own"  # meta key: {project: [seq, hash, digest of what it pushed]}
_MINE = "FROM memories WHERE editor = ? AND visibility = 'private'"
_TRUST_OWN = "private_trust_own"  # meta key: [seq, digest] of our trust decisions pushed
_TRUST_SEEN = "private_trust_seen"  # meta key: {sibling kid: seq of its decisions merged}


@dataclass
class _Run:
    team: Team
    state: TrustedState
    roster: Roster
    member: str
    space: Transport
    summary: PullSink
    now: int

    def refuse(self, reason: str, obj: str, detail: str) -> None:
        self.summary.refused.append(Refusal(reason, obj, detail))


def sync_private(
    team: Team, state: TrustedState, summary: PullSink, tick: Callable[[], int], *, push: bool
) -> None:
    """The private phase of one sync (see the module docstring)."""
    roster = state.roster
    if roster is None or not publishes_private(roster, team.me):
        return
    me = roster.member(team.me)
    space = team.transport.private_space(me.id) if me is not None else None
    if me is None or space is None:
        return
    run = _Run(team, state, roster, me.id, space, summary, tick())
    private = _load(team)
    private = _accept_rings(run, private)
    plan = keyring_plan(roster, private, team.me)
    if plan != "none" and push:
        private = _publish_ring(run, private, plan)
    for device in member_devices(roster, me.id):
        if device.kid != team.me:
            for project in space.chain_projects(device.kid):
                private = _pull(run, private, device.kid, project)
    for device in member_devices(roster, me.id):
        if device.kid != team.me:
            _pull_trust(run, private, device.kid)
    if push and keyring_plan(roster, private, team.me) == "none":
        _push(run, private)
        _push_trust(run, private)


def _load(team: Team) -> PrivateState:
    raw = get_meta(team.conn, _STATE)
    return PrivateState() if raw is None else PrivateState.from_wire(json.loads(raw))


def _save(team: Team, private: PrivateState) -> None:
    set_meta(team.conn, _STATE, canonical.encode(private.to_wire()).decode())


def _accept_rings(run: _Run, private: PrivateState) -> PrivateState:
    for data in run.space.member_keyrings():
        try:
            ring = MemberKeyring.from_body(
                unpack(data, what="member keyring", max_bytes=MAX_KEYRING_BYTES).body
            )
            if private.rings.get((ring.member, ring.epoch)) == ring:
                continue  # trusted already (its signer may be revoked since: it stays)
            private, _ = accept_member_keyring(SUITE, run.state, private, data)
        except Rejected as exc:
            run.refuse(exc.reason, f"member keyring of {run.member}", exc.detail)
    with transaction(run.team.conn):
        _save(run.team, private)
    return private


def _key(run: _Run, ring: MemberKeyring) -> ContentKey | None:
    """This device's member key of ``ring``'s epoch; None when it holds no wrap, or its
    wrap does not open (refused by name: a device of the member wrapped another key)."""
    if run.team.me not in ring.wraps:
        return None
    try:
        return ring.open_key(run.team.me, lambda wrap: ContentKey.unwrap(wrap, run.team.key))
    except Rejected as exc:
        run.refuse(exc.reason, f"member keyring of {ring.member} epoch {ring.epoch}", exc.detail)
        return None


def _publish_ring(run: _Run, private: PrivateState, plan: str) -> PrivateState:
    """A new epoch wrapped to the member's devices (``rotate``), or the current key
    wrapped to a device added since (``extend``)."""
    current = private.current(run.member)
    key = None if plan == "rotate" or current is None else _key(run, current)
    epoch = 1 if current is None else current.epoch
    if key is None:
        key, epoch = ContentKey.generate(), epoch + (current is not None)
    data = build_member_keyring(key, run.roster, run.member, epoch).sign(run.team.key)
    after, _ = accept_member_keyring(SUITE, run.state, private, data)
    new = (run.member, epoch) not in private.rings  # else an update: same key, more wraps
    try:  # trusted here only once the space holds it: another device may have made one
        run.space.put_member_keyring(epoch, data, new=new)
    except ConflictError as exc:
        run.summary.warnings.append(f"member keyring {epoch} not published: {exc}")
        return _accept_rings(run, private)
    with transaction(run.team.conn):
        _save(run.team, after)
    return after


def _pull(run: _Run, private: PrivateState, writer: str, project: str) -> PrivateState:
    where = f"private chain {writer}/{project}"
    data = run.space.newest_manifest(project, writer)
    if data is None:
        return private
    before = private.heads.get((writer, project))
    try:
        after, m = accept_private_manifest(
            SUITE, run.state, private, data, member=run.member, writer=writer, project=project
        )
        if after.heads.get((writer, project)) == before:
            return private  # the manifest already merged
        ring = after.rings[run.member, m.epoch]
        key = _key(run, ring)
        if key is None:  # an epoch made before this device was added, not wrapped to it yet
            return private
        chunks = {ref.id: c for ref in m.chunks if (c := run.space.chunk(project, writer, ref.id))}
        records = open_snapshot(SUITE, key, m, chunks, now_ms=run.now)
    except Rejected as exc:
        run.refuse(exc.reason, where, exc.detail)
        return private
    except OBJECT_ERRORS as exc:
        run.refuse("malformed", where, f"{type(exc).__name__}: {exc}")
        return private
    device = run.roster.member(writer)
    provenance = Provenance(
        transport=run.team.transport.kind,
        signer=writer,
        signer_name=None if device is None else device.name,
        verified=True,
        received_at=run.now,
        snapshot_seq=m.seq,
    )
    with transaction(run.team.conn):
        result = apply_versions(run.team.conn, records, provenance, run.now)
        _save(run.team, after)
    run.summary.pulled_new += result.new
    run.summary.pulled_updated += result.updated
    return after


def _above_held(run: _Run, project: str, seq: int, prev: str | None) -> tuple[int, str | None]:
    """The head to build on: ours as recorded, or our newest manifest the transport
    holds above it (a store restored from a backup: its chain goes on, nothing is lost,
    as its records are all in this store or merged back from the siblings)."""
    data = run.space.newest_manifest(project, run.team.me)
    if data is None:
        return seq, prev
    try:
        held = own_manifest(
            SUITE, data, writer=run.team.me, sign_public=run.team.key.sign_public,
            project=project,
        )  # fmt: skip
    except Rejected:
        return seq, prev  # not ours: the push's compare-and-swap says what it is
    return (held.seq, held.hash(SUITE)) if held.private and held.seq > seq else (seq, prev)


def _push(run: _Run, private: PrivateState) -> None:
    ring = private.current(run.member)
    key = None if ring is None else _key(run, ring)
    if ring is None or key is None:
        return
    conn, me = run.team.conn, run.team.me
    own = json.loads(get_meta(conn, _OWN) or "{}")
    projects = [r[0] for r in conn.execute(f"SELECT DISTINCT project {_MINE}", (me,))]
    for project in sorted(projects):
        sql = f"SELECT {RECORD_COLUMNS} {_MINE} AND project = ? ORDER BY id"
        rows = conn.execute(sql, (me, project))
        records = list(map(record_from_values, rows))
        wire = canonical.encode([ring.epoch, run.roster.version, [r.to_wire() for r in records]])
        digest = SUITE.blake2b(wire, size=32).hex()
        seq, prev, pushed = own.get(project, (0, None, None))
        if pushed == digest:
            continue
        seq, prev = _above_held(run, project, seq, prev)
        snap = build_snapshot(
            SUITE, key, run.team.key, team=run.state.team, project=project, epoch=ring.epoch,
            roster_version=run.roster.version, seq=seq + 1, prev=prev, records=records,
            random=random_bytes, created_at=run.now, private=True,
        )  # fmt: skip
        try:
            run.space.push(project, me, seq + 1, snap.envelope, snap.new_chunks)
        except ConflictError as exc:
            run.summary.warnings.append(f"private chain of {project!r} not pushed: {exc}")
            continue
        own[project] = (seq + 1, snap.hash or snap.manifest.hash(SUITE), digest)
        with transaction(conn):
            set_meta(conn, _OWN, json.dumps(own))


def _pull_trust(run: _Run, private: PrivateState, writer: str) -> None:
    """Merge a sibling's trust decisions, per teammate, last writer wins."""
    data = run.space.trust(writer)
    conn = run.team.conn
    seen = json.loads(get_meta(conn, _TRUST_SEEN) or "{}")
    if data is None:
        return
    try:
        ts = accept_trust(
            SUITE, run.state, private, data, member=run.member, writer=writer,
            held_seq=seen.get(writer, 0),
        )  # fmt: skip
        if ts.seq == seen.get(writer):
            return
        key = _key(run, private.rings[run.member, ts.epoch])
        if key is None:
            return
        entries = open_trust(ts, key)
    except Rejected as exc:
        run.refuse(exc.reason, f"trust decisions of {writer}", exc.detail)
        return
    with transaction(conn):
        for e in entries:
            merge_decision(conn, run.team.me, writer, e.member, e.state, (e.wall, e.counter))
        set_meta(conn, _TRUST_SEEN, json.dumps({**seen, writer: ts.seq}))


def _push_trust(run: _Run, private: PrivateState) -> None:
    """Publish the decisions made on this device when they changed since the last time."""
    ring = private.current(run.member)
    key = None if ring is None else _key(run, ring)
    conn = run.team.conn
    mine = decisions_here(conn)
    if ring is None or key is None or not mine:
        return
    digest = SUITE.blake2b(canonical.encode([ring.epoch, mine]), size=32).hex()
    seq, pushed = json.loads(get_meta(conn, _TRUST_OWN) or "[0, null]")
    if pushed == digest:
        return
    entries = [TrustEntry(m, state, at, counter) for m, state, at, counter in mine]
    data = seal_trust(
        key, run.team.key, team=run.state.team, member=run.member, epoch=ring.epoch,
        seq=seq + 1, entries=entries, random=random_bytes,
    )  # fmt: skip
    run.space.put_trust(run.team.me, data)
    with transaction(conn):
        set_meta(conn, _TRUST_OWN, json.dumps([seq + 1, digest]))
