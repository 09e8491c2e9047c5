"""The sync engine: pull and verify teammates' snapshots, merge them, push our own.

One :func:`sync` run, under an exclusive lock on ``<home>/sync.lock`` so that
two syncs of one store never interleave:

1. **refresh**: new roster versions (chain from the pinned root), then keyrings;
2. **pull**, per readable project and writer whose newest manifest moved:
   verify the manifest (grant, chain, rollback, fork, witnesses), then fetch,
   open and merge the chunks not already opened one at a time, with provenance
   (:mod:`sealmem.client.sync.pull`).  A snapshot's merged versions, chain head
   and chunk cache commit in one transaction: a refused snapshot merges nothing;
3. **own chain**, before anything is written: our own chain is read back in every
   project we push to (:func:`~sealmem.client.sync.own_chain.read_own_chains`): a head a
   restore left behind is adopted once, a head another machine wrote with this key stops
   the sync as ``key-in-use``, a head teammates witness but the transport withholds
   keeps that project from publishing;
4. **push**, per writable project: first the versions not pushed yet are
   redacted again (their own transaction); then the push gathers what the store
   and the transport hold of ours, decides in :mod:`sealmem.protocol` (which head
   is ours, the plan, what it reuses), builds the snapshot, pushes it and records
   the new chain head, its only write (:mod:`sealmem.client.sync.push`);
5. **local only**: per project whose team memories of ours are not pushed (no
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
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import filelock

from ...protocol import hubapi
from ...protocol.errors import InputError, Rejected, SealmemError, StoreError, TransportError
from ...protocol.own import Ours
from ...protocol.push import writable_projects
from ...protocol.roster import Roster
from ...protocol.state import TrustedState
from ...protocol.witness import Citation
from ..clock import now_ms
from ..store import scrub
from ..store.connection import sqlite_errors, transaction
from . import clockhealth, dropping, freshness, outgoing, replica
from .enrolment import check_enrolment
from .local_only import LocalOnly, local_only
from .own_chain import read_own_chains
from .private_chains import sync_private
from .pull import pull_project
from .push import push_project, redact_pending
from .session import Refusal, Team
from .transport import Unreachable

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
    cited: Citation = field(default_factory=Citation)  # newest roster a teammate cited

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
            "refused": [asdict(r) for r in self.refused],
            "warnings": list(self.warnings),
            "collected_chunks": self.collected_chunks,
            "local_only": [entry.to_dict() for entry in self.local_only],
            "summary": self.line(),
        }


def sync(
    team: Team, *, clock: Callable[[], int] | None = None, push: bool = True, pull: bool = True,
    adopt: bool = False,
) -> SyncSummary:  # fmt: skip
    """Run one sync of ``team`` (see the module docstring); return its summary.  ``adopt``
    (``sync --adopt``) reads our own chain back once more although this device adopted
    before (a second restore; SPEC "Restore and copied keys")."""
    tick = clock or now_ms
    summary = SyncSummary()
    with sync_lock(team.home), team.transport.syncing():
        started = tick()
        try:
            with sqlite_errors(team.store.path):  # disk full, read-only, I/O: one sentence
                _run(team, summary, tick, started, push=push, pull=pull, adopt=adopt)
        except SealmemError as exc:
            summary.warnings += team.transport.take_warnings()
            # Stopped part way (folder gone, hub down): keep what was learnt, say why;
            # a store too broken to record it must not hide the original error.
            with contextlib.suppress(SealmemError, sqlite3.Error):
                clockhealth.note(team.conn, team.transport, tick(), started)
                _record(team, summary, started, tick(), error=str(exc))
            raise
        summary.warnings += team.transport.take_warnings()
        with sqlite_errors(team.store.path):
            if (
                clock_off := clockhealth.note(team.conn, team.transport, tick(), started)
            ) is not None:
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
    adopt: bool,
) -> None:
    state, refused = team.refresh(team.trusted(), started)
    summary.refused += refused
    roster = state.roster
    if roster is None or roster.member(team.me) is None:
        summary.warnings.append(_not_a_member(team.join_status(state)))
        _note_local_only(team, roster, summary)
        return
    try:  # a new device's first sync: the chain must hold what its invite cited
        check_enrolment(team.home, state)
    except Rejected as exc:
        raise InputError(
            f"this device's enrolment is refused ({exc.reason}): {exc.detail}"
        ) from exc
    if replica.pushes_as(team.conn) != team.me:  # the dirty log keeps only our rows
        with transaction(team.conn):
            replica.claim_pushes(team.conn, team.me)
    if pull:
        state = _purge_revoked(team, state, roster, summary, tick())
        for project in sorted(roster.projects):
            if roster.can_read(team.me, project):
                state = pull_project(team, state, project, summary, tick)
    checked, pushable = _read_own_chains(team, state, roster, summary, tick(), push, adopt)
    verdict, state = freshness.check(team, state, summary, tick())
    if verdict.level != "ok":
        summary.warnings.append(verdict.line())
    roster = state.roster or roster  # read again when a teammate cited a newer one
    revoked = roster.revocation(team.me)
    # a stop was said above: nothing is published under what may be an old epoch
    push = push and verdict.level != "stop"
    if push and revoked is not None:
        me = roster.member(team.me)
        person = None if me is None else roster.person(me.id)
        device_only = person is not None and person.removed_at is None  # the member stays
        who = "this device" if device_only else "this member"
        fix = " (or 'sealmem device add' on another of your devices)" if device_only else ""
        summary.warnings.append(
            f"{who} was revoked from the team in roster v{revoked.at_version}: "
            f"nothing is pushed, and teammates refuse what it writes; ask an admin{fix}"
        )
    failed: list[TransportError] = []
    if push and revoked is None:
        failed = _push_projects(team, state, roster, summary, tick, checked, pushable)
    if pull or push:  # private memories to and from this member's other devices
        sync_private(team, state, summary, tick, push=push and revoked is None)
    _note_local_only(team, roster, summary)
    if failed:  # the rest went on; the sync still fails, naming the first
        raise failed[0]


def _push_projects(
    team: Team, state: TrustedState, roster: Roster, summary: SyncSummary,
    tick: Callable[[], int], checked: set[str], pushable: dict[str, Ours | None],
) -> list[TransportError]:  # fmt: skip
    """Push every project we write to; a project whose push the transport refuses (a
    planted entry where our objects go, a slot another device took) does not keep the
    others from being pushed: its error is returned.  An unreachable transport ends it."""
    failed: list[TransportError] = []
    for project in writable_projects(roster, team.me):
        if project in checked and project not in pushable:
            continue  # its own chain said why (a withheld head, a head not read back)
        redact_pending(team, project, tick())
        try:
            push_project(team, state, project, summary, tick, pushable.get(project))
        except Unreachable:
            raise
        except TransportError as exc:
            failed.append(exc)
    with transaction(team.conn):
        outgoing.drop_unused_dirty(team.conn)
    return failed


def _read_own_chains(
    team: Team, state: TrustedState, roster: Roster, summary: SyncSummary, now: int,
    push: bool, adopt: bool,
) -> tuple[set[str], dict[str, Ours | None]]:  # fmt: skip
    """Before anything is written (the checkpoint included): read our own chain back in
    every project we push to; return those read, and those to push with the heads read.
    Raises ``key-in-use``."""
    if not push or roster.revocation(team.me) is not None:
        return set(), {}
    projects = writable_projects(roster, team.me)
    return set(projects), read_own_chains(team, state, projects, summary, now, confirm=adopt)


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
    if ahead.purged or revoked.purged:  # a tombstone won again: wipe the text it erased
        scrub.settle(team.conn)
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
