"""What a writer's next push does, as a pure function over values (DESIGN §5).

The sync engine gathers the inputs (its own chain head as recorded locally, its
newest manifest found in the transport, the roster's epoch and latest reset for
it, the seq teammates witnessed, a summary of its publishable versions), calls
:func:`plan_push`, and carries the plan out: build the snapshot, push it, record
the new head.  Every decision is here, so each branch is one row of a table test:

- **skip** when nothing of ours changed since the last push (and the transport
  still holds every chunk of our last manifest intact), or when a store that
  never pushed has nothing to publish;
- **adopt** our own manifest found in the transport with a seq above the local
  record: a push interrupted after its manifest landed.  A new manifest at the
  same seq would look like a fork to everyone who saw it;
- **continue** the chain (``seq + 1``, ``prev`` = hash of the head);
- **start a new chain** (``prev`` None) when this store never pushed, or after
  an admin's reset of our chain (``reset-writer``), at a seq above every one
  teammates may have seen: ours in the transport and the one they witnessed.
  Starting a new chain without a reset is refused by teammates (``fork``), so
  the plan warns;
- an epoch change (rotation) or a reset forces a rebuild: unchanged chunks are
  not reused, and the snapshot is published even when its chunks match
  (:meth:`PushPlan.publishes`);
- a continued chain may publish a delta manifest against the full manifest its head
  is listed against (:attr:`PushPlan.listing`; whether it does is
  :func:`~sealmem.protocol.snapshot.listed_against`); a new chain, a reset and a
  repair publish a full one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from .hlc import MAX_AHEAD_MS, ZERO, Hlc, too_far_ahead
from .manifest import Manifest
from .roster import Roster
from .snapshot import BUCKET_KEYS, PreviousSnapshot, Rebuild, bucket_count

__all__ = [
    "LOCAL_NOT_MEMBER",
    "LOCAL_NO_GRANT",
    "LOCAL_READ_ONLY",
    "LOCAL_REASONS",
    "LOCAL_REVOKED",
    "LOCAL_UNREGISTERED",
    "SKIP_EMPTY",
    "SKIP_UNCHANGED",
    "Landed",
    "OwnHead",
    "Publishable",
    "PushPlan",
    "plan_push",
    "plan_rebuild",
    "plan_reuse",
    "why_local",
    "writable_projects",
]

SKIP_UNCHANGED = "unchanged"
"""Nothing of ours changed since the manifest we last published."""
SKIP_EMPTY = "empty"
"""This store never pushed in the project and has nothing to publish."""

# Why a member's team memories in a project stay on its machine (:func:`why_local`).
LOCAL_NOT_MEMBER = "not-member"
"""No trusted roster lists this member yet: its join request waits for an admin."""
LOCAL_REVOKED = "revoked"
"""The member is revoked: it pushes nowhere, and teammates refuse what it writes."""
LOCAL_UNREGISTERED = "unregistered-project"
"""The project is not registered in the roster: nobody pushes to it."""
LOCAL_READ_ONLY = "read-only"
"""The member may read the project but holds no write grant for it."""
LOCAL_NO_GRANT = "no-grant"
"""The member holds no grant at all for the project."""
LOCAL_REASONS: tuple[str, ...] = (
    LOCAL_NOT_MEMBER,
    LOCAL_REVOKED,
    LOCAL_UNREGISTERED,
    LOCAL_READ_ONLY,
    LOCAL_NO_GRANT,
)


@dataclass(frozen=True, slots=True)
class OwnHead:
    """The last manifest this writer published in a project, as recorded locally."""

    manifest: Manifest
    hash: str
    pushed: Hlc  # the newest HLC published in this chain
    pushed_count: int  # publishable versions (due tombstones included) at that push
    reset_at: int  # roster version of the admin reset this chain answers (0: none)
    full: tuple[Manifest, str] | None = None  # a delta head's base (manifest, hash)


@dataclass(frozen=True, slots=True)
class Landed:
    """Our newest manifest found in the transport, already verified under our key."""

    manifest: Manifest
    hash: str
    full: tuple[Manifest, str] | None = None  # a delta's base (manifest, hash)


@dataclass(frozen=True, slots=True)
class Publishable:
    """This writer's publishable versions in a project, as counted in the store."""

    count: int  # team winners it edited, tombstones included
    newest: Hlc  # the newest HLC among them (ZERO when none)
    due: int  # tombstones past the grace period: collected, not published


@dataclass(frozen=True, slots=True)
class PushPlan:
    """What to push: nothing (``skip`` says why), or a manifest at ``seq`` after ``prev``."""

    skip: str | None
    seq: int = 0
    prev: str | None = None
    adopt: Landed | None = None
    base: Manifest | None = None  # the manifest whose unchanged chunks may be reused
    force: bool = False  # publish even if the chunks did not change (a reset)
    pushed: Hlc = ZERO  # the newest HLC already published, before this push
    reset_at: int = 0  # record with the new head
    warnings: tuple[str, ...] = ()
    listing: tuple[Manifest, str] | None = None  # the full manifest a delta may list against

    def publishes(self, built: Manifest) -> bool:
        """False when ``built`` would publish the very chunks of the base manifest again."""
        return (
            self.force
            or self.base is None
            or self.base.epoch != built.epoch
            or self.base.chunks != built.chunks
        )


def why_local(roster: Roster | None, me: str, project: str) -> str | None:
    """None when ``me`` pushes its team memories of ``project``; else why they stay on its
    machine (one of :data:`LOCAL_REASONS`).  ``roster`` is the newest one ``me`` trusts
    (None: none yet).  The one rule behind :func:`writable_projects`."""
    if roster is None:
        return LOCAL_NOT_MEMBER
    if roster.revocation(me) is not None:
        return LOCAL_REVOKED
    if project in roster.projects and roster.can_write(me, project):
        return None
    if roster.member(me) is None:
        return LOCAL_NOT_MEMBER
    if project not in roster.projects:
        return LOCAL_UNREGISTERED
    return LOCAL_READ_ONLY if roster.can_read(me, project) else LOCAL_NO_GRANT


def writable_projects(roster: Roster, me: str) -> list[str]:
    """The projects ``me`` pushes to, sorted: those it may write, none once revoked."""
    return [p for p in sorted(roster.projects) if why_local(roster, me, p) is None]


def plan_push(
    *,
    project: str,
    own: OwnHead | None,
    landed: Landed | None,
    epoch: int,
    reset_at: int,
    witnessed_seq: int,
    publishable: Publishable,
    now_ms: int,
    repair: bool = False,
) -> PushPlan:
    """The plan for this writer's next push in ``project``, at ``epoch``.

    The caller holds the content key of ``epoch`` (without it nothing can be
    built: it warns and does not plan).
    ``reset_at`` is the roster version of the latest admin reset of our chain in
    the project (0: none); ``witnessed_seq`` the seq of ours that teammates' heads
    carry (0: none); ``now_ms`` this writer's clock.  ``repair`` says that chunks of
    our last manifest are missing or damaged in the transport: even with nothing
    new the chain continues (the caller rebuilds those buckets, so that readers
    can open the snapshot again).
    """
    adopt = None
    if landed is not None and landed.manifest.seq > (own.manifest.seq if own else 0):
        adopt = landed
    head = adopt or own  # the manifest this push builds on
    base = None if head is None else head.manifest
    pushed = own.pushed if own else ZERO
    chain_reset = own.reset_at if own else 0
    resetting = reset_at > chain_reset
    published = publishable.count - publishable.due
    if (
        own is not None
        and adopt is None
        and not repair
        and not resetting
        and own.manifest.epoch == epoch
        and publishable.count == own.pushed_count
        and publishable.newest <= pushed
        and own.manifest.records == published
    ):
        return PushPlan(SKIP_UNCHANGED)
    if base is None and published == 0:
        return PushPlan(SKIP_EMPTY)
    warnings: list[str] = []
    if too_far_ahead(publishable.newest, now_ms):
        warnings.append(
            f"a memory of ours in {project!r} carries a clock more than "
            f"{MAX_AHEAD_MS // 3_600_000} h ahead of this machine's ({publishable.newest.wall} "
            f"ms vs {now_ms} ms); teammates refuse this snapshot (clock-ahead) while it is "
            "that far ahead of theirs: check this machine's clock ('sealmem doctor')"
        )
    if head is None or resetting:
        known = max(
            base.seq if base is not None else 0,
            landed.manifest.seq if landed is not None else 0,
            witnessed_seq,
        )
        if head is None and known:
            warnings.append(
                f"this store starts a new chain in {project!r}; teammates refuse it until an "
                "admin runs 'sealmem admin reset-writer' for this member"
            )
        return PushPlan(
            None, known + 1, None, adopt, base, force=resetting, pushed=pushed,
            reset_at=reset_at if resetting else chain_reset, warnings=tuple(warnings),
        )  # fmt: skip
    listing = (head.manifest, head.hash) if head.manifest.delta is None else head.full
    return PushPlan(
        None, head.manifest.seq + 1, head.hash, adopt, head.manifest, force=repair, pushed=pushed,
        reset_at=chain_reset, warnings=tuple(warnings), listing=None if repair else listing,
    )  # fmt: skip


def plan_rebuild(
    plan: PushPlan,
    *,
    epoch: int,
    published: int,
    digests: Mapping[int, str],
    dirty: Iterable[int],
    lost: Collection[int] = (),
) -> Rebuild | None:
    """Which buckets of ``plan.base`` the push builds again; None: build every bucket.

    ``published`` is how many records the new snapshot carries (publishable, due
    tombstones left out); ``digests`` the plaintext digests kept from our last push
    (bucket -> digest); ``dirty`` the bucket keys
    (:func:`~sealmem.protocol.snapshot.bucket_key`) of every memory whose published
    fields were written since, and of tombstones that came due or stopped being due;
    ``lost`` the buckets whose chunks the transport lost or damaged.

    Only a continued chain under the same epoch and bucket count rebuilds part of
    the snapshot: no base, an adopted manifest (its digests are not ours), a reset,
    an epoch change or a new bucket count rebuild everything.  Besides the dirty
    buckets, a bucket whose digest is unknown or whose chunk was lost is rebuilt.
    """
    base = plan.base
    if base is None or plan.force or plan.adopt is not None or base.epoch != epoch:
        return None
    buckets = base.buckets
    if BUCKET_KEYS % buckets or bucket_count(published, buckets) != buckets:
        return None
    only = {key % buckets for key in dirty}
    only.update(lost)
    only.update(c.bucket for c in base.chunks if c.bucket not in digests)
    return Rebuild(frozenset(only), buckets, published)


def plan_reuse(
    plan: PushPlan,
    *,
    epoch: int,
    published: int,
    digests: Mapping[int, str],
    dirty: Iterable[int],
    damaged: Collection[str] = (),
) -> tuple[PreviousSnapshot | None, Rebuild | None]:
    """What the push keeps of ``plan.base`` (None: nothing, no base), and which buckets it
    builds again (:func:`plan_rebuild`; None: every bucket).

    The base keeps the plaintext ``digests`` of our last push, but for an adopted manifest
    (they are not its digests) and for the buckets whose chunks the transport lost or
    damaged (the chunk ids in ``damaged``): those are encrypted again."""
    if plan.base is None:
        return None, None
    lost = {c.bucket for c in plan.base.chunks if c.id in damaged}
    ours = {} if plan.adopt is not None else {b: d for b, d in digests.items() if b not in lost}
    rebuild = plan_rebuild(
        plan, epoch=epoch, published=published, digests=ours, dirty=dirty, lost=lost
    )
    return PreviousSnapshot(plan.base, ours), rebuild
