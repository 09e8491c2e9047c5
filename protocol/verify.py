"""The verifier: accept a roster, keyring or manifest into a TrustedState, or refuse it.

Each ``accept_*`` function takes the current :class:`TrustedState` and the object's
wire bytes and returns ``(new_state, parsed_object)``, or raises
:class:`~sealmem.protocol.errors.Rejected` with a named reason (SPEC.md "Reasons",
"Roster chain rules", "Manifest rules").  Checks run cheapest and most specific first:
size, canonical form, format, team, shape, then the signer and its signature, then the
rules of the chain.  Chunks of an accepted manifest are opened with :func:`open_snapshot`
(all or nothing) or :func:`read_snapshot` (a partial read, SPEC "Partial reads").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import reasons
from .bases import with_heads
from .chunks import open_snapshot, read_snapshot
from .devices import check_extends
from .envelope import Envelope, unpack
from .errors import Rejected
from .keyring import MAX_KEYRING_BYTES, Keyring
from .manifest import MAX_MANIFEST_BYTES, Manifest
from .roster import Roster
from .state import ChainHead, TrustedState, Witness
from .suite import Suite

__all__ = [
    "MAX_KEYRING_BYTES",
    "MAX_MANIFEST_BYTES",
    "MAX_ROSTER_BYTES",
    "accept_keyring",
    "accept_manifest",
    "accept_roster",
    "check_team",
    "next_head",
    "open_snapshot",
    "read_snapshot",
]

MAX_ROSTER_BYTES = 4 * 1024 * 1024


def check_team(state: TrustedState, body: Mapping[str, Any], what: str) -> None:
    """Refuse (``cross-team``) an object whose body names another team than ``state``'s."""
    team = body.get("team")
    if isinstance(team, str) and team != state.team:
        raise Rejected(
            reasons.CROSS_TEAM, f"{what} belongs to team {team!r}, this is team {state.team!r}"
        )


def _current(state: TrustedState, what: str) -> Roster:
    roster = state.roster
    if roster is None:
        raise Rejected(
            reasons.ROSTER_UNKNOWN, f"no trusted roster yet to check a {what}; fetch the roster"
        )
    return roster


def _roster_signer_key(state: TrustedState, env: Envelope, version: int) -> bytes:
    """The public key of the admin who may sign roster ``version``."""
    if version == 1:
        if env.signer != state.root_kid:
            raise Rejected(
                reasons.NOT_ADMIN,
                f"roster v1 is signed by {env.signer}, not the pinned team root {state.root_kid}",
            )
        return state.root_public
    prior = state.rosters.get(version - 1)
    if prior is None:
        raise Rejected(
            reasons.ROSTER_NOT_EXTENDING,
            f"roster v{version} does not follow a trusted version; fetch versions "
            f"{(max(state.rosters) + 1) if state.rosters else 1}..{version - 1} first",
        )
    return prior.admin_key(env.signer, f"roster v{version}")


def _check_extends(suite: Suite, old: Roster, new: Roster, signer: str) -> None:
    def refuse(why: str) -> Rejected:
        return Rejected(reasons.ROSTER_NOT_EXTENDING, f"roster v{new.version} {why}")

    if old.people and not new.people:
        raise refuse(f"is {new.format}, after the trusted v{old.version} in {old.format}")
    if new.people:
        check_extends(
            old.people or None, old.members, new.people,
            old_version=old.version, new_version=new.version, signer=signer,
            old_revoked={r.kid: r.at_version for r in old.revocations},
        )  # fmt: skip
    if new.prev != old.hash(suite):
        raise refuse(f"does not chain to the trusted v{old.version} (prev hash differs)")
    for project, epoch in old.projects.items():
        if new.projects.get(project, 0) < epoch:
            raise refuse(f"drops project {project!r} or lowers its epoch below {epoch}")
    if new.revocations[: len(old.revocations)] != old.revocations:
        raise refuse("removes or rewrites an earlier revocation")
    if new.resets[: len(old.resets)] != old.resets:
        raise refuse("removes or rewrites an earlier reset")
    added = [(r.kid, r.at_version) for r in new.revocations[len(old.revocations) :]]
    added += [(r.kid, r.at_version) for r in new.resets[len(old.resets) :]]
    for kid, at_version in added:
        if at_version != new.version:
            raise refuse(f"adds a revocation or reset for {kid} dated v{at_version}")


def accept_roster(suite: Suite, state: TrustedState, data: bytes) -> tuple[TrustedState, Roster]:
    """Accept the next roster version (or the current one again)."""
    env = unpack(data, what="roster", max_bytes=MAX_ROSTER_BYTES)
    check_team(state, env.body, "roster")
    roster = Roster.from_body(env.body, suite)
    current = state.roster
    if current is not None and roster.version < current.version:
        raise Rejected(
            reasons.ROLLBACK,
            f"roster v{roster.version} is older than the trusted v{current.version}; "
            "the transport is serving stale data",
        )
    env.check(suite, "roster", _roster_signer_key(state, env, roster.version))
    if current is None:
        root = roster.member(state.root_kid)
        if roster.version != 1 or root is None or state.root_kid not in roster.admins:
            raise Rejected(
                reasons.NOT_ADMIN, "roster v1 must list the pinned team root key as an admin"
            )
        if root.sign_public != state.root_public:
            raise Rejected(reasons.NOT_ADMIN, "roster v1 lists the root kid with another key")
    elif roster.version == current.version:
        if roster.hash(suite) == current.hash(suite):
            return state, current
        raise Rejected(
            reasons.FORK,
            f"two different rosters claim v{roster.version}; an admin key signed both, "
            "or the transport is showing members different histories",
        )
    else:
        _check_extends(suite, current, roster, env.signer)
    return state.evolve(rosters={**state.rosters, roster.version: roster}), roster


def accept_keyring(suite: Suite, state: TrustedState, data: bytes) -> tuple[TrustedState, Keyring]:
    """Accept a project epoch's keyring signed by an admin of the roster it names (its
    epoch: :func:`_check_epoch`; a second one for a trusted epoch: :func:`_check_update`).
    An older epoch's keyring never changes which epoch is current: that is the roster's."""
    env = unpack(data, what="keyring", max_bytes=MAX_KEYRING_BYTES)
    check_team(state, env.body, "keyring")
    keyring = Keyring.from_body(env.body)
    current = _current(state, "keyring")
    where = f"keyring {keyring.project!r} epoch {keyring.epoch}"
    if keyring.project not in current.projects:
        raise Rejected(reasons.UNKNOWN_PROJECT, f"{where}: project not in the trusted roster")
    cited = state.rosters.get(keyring.roster_version)
    if cited is None:
        raise Rejected(
            reasons.ROSTER_UNKNOWN,
            f"{where} names roster v{keyring.roster_version}, newer than the trusted "
            f"v{current.version}; fetch the roster first",
        )
    env.check(suite, "keyring", cited.admin_key(env.signer, where))
    if current.revocation(env.signer) is not None:
        raise Rejected(reasons.REVOKED, f"{where} is signed by revoked admin {env.signer}")
    _check_epoch(state, cited, keyring, where)
    for kid in keyring.wraps:
        if not cited.can_read(kid, keyring.project):
            raise Rejected(
                reasons.NO_READ_GRANT, f"{where} wraps the key to {kid}, who may not read it"
            )
    known = state.keyring(keyring.project, keyring.epoch)
    if known is not None:
        if known == keyring:
            return state, known
        _check_update(known, keyring, cited, where)
    slot = (keyring.project, keyring.epoch)
    return state.evolve(keyrings={**state.keyrings, slot: keyring}), keyring


def _check_epoch(state: TrustedState, cited: Roster, keyring: Keyring, where: str) -> None:
    """The keyring's epoch is the cited roster's epoch for the project, or an older one
    the project had in a trusted roster up to the cited one (an admin re-publishing an
    older epoch to wrap it to new readers); anything else is ``epoch-unknown``."""
    current = cited.projects.get(keyring.project)
    if current == keyring.epoch:
        return
    if current is not None and keyring.epoch < current:
        had = any(
            r.projects.get(keyring.project) == keyring.epoch
            for v, r in state.rosters.items()
            if v <= cited.version
        )
        if had:
            return
    raise Rejected(
        reasons.EPOCH_UNKNOWN,
        f"{where}: roster v{cited.version} has epoch {current} for this project, and no "
        f"trusted roster up to v{cited.version} gave it epoch {keyring.epoch}",
    )


def _check_update(known: Keyring, keyring: Keyring, cited: Roster, where: str) -> None:
    """A second keyring for a trusted (project, epoch) may only add readers: the same key,
    a strictly newer cited roster, every wrap kept whose member may still read."""
    if keyring.key_id != known.key_id:
        raise Rejected(
            reasons.FORK,
            f"{where} commits to another key than the trusted keyring of this epoch; "
            "an admin key wrapped two keys for one epoch, or the transport mixes histories",
        )
    if keyring.roster_version < known.roster_version:
        raise Rejected(
            reasons.ROLLBACK,
            f"{where} cites roster v{keyring.roster_version}, older than the trusted "
            f"keyring's v{known.roster_version}; the transport is serving stale data",
        )
    if keyring.roster_version == known.roster_version:
        raise Rejected(
            reasons.FORK,
            f"{where}: a different keyring citing roster v{keyring.roster_version} is trusted",
        )
    dropped = sorted(
        kid
        for kid in known.wraps
        if kid not in keyring.wraps and cited.can_read(kid, keyring.project)
    )
    if dropped:
        raise Rejected(
            reasons.FORK,
            f"{where} drops the wrap of {', '.join(dropped)}, who may still read the project "
            f"in roster v{cited.version}; an update only adds readers",
        )


def accept_manifest(
    suite: Suite,
    state: TrustedState,
    data: bytes,
    *,
    project: str | None = None,
    writer: str | None = None,
    rebuild: Callable[[Manifest], Manifest] | None = None,
) -> tuple[TrustedState, Manifest]:
    """Accept a writer's manifest; ``project`` and ``writer`` are where the transport
    filed it (a manifest found in another slot is refused).

    A v3 delta that would become the head is rebuilt from its base before any head it
    witnesses is read: ``rebuild`` (:func:`~sealmem.protocol.bases.rebuild` with the
    candidates the caller holds) returns it whole or raises ``missing-base``/``tampered``;
    without one it is ``missing-base``.  The manifest returned is then the rebuilt one."""
    env = unpack(data, what="manifest", max_bytes=MAX_MANIFEST_BYTES)
    check_team(state, env.body, "manifest")
    m = Manifest.from_body(env.body)
    where = f"manifest {m.writer}/{m.project} seq {m.seq}"
    if m.private:
        raise Rejected(reasons.MALFORMED, f"{where}: a private manifest in a team slot")
    if project is not None and m.project != project:
        raise Rejected(reasons.CROSS_PROJECT, f"{where} was served as one of {project!r}")
    if m.writer != env.signer or (writer is not None and m.writer != writer):
        raise Rejected(
            reasons.SIGNER_MISMATCH,
            f"{where} is signed by {env.signer} and filed under {writer or m.writer}",
        )
    roster = _current(state, "manifest")
    if m.project not in roster.projects:
        raise Rejected(reasons.UNKNOWN_PROJECT, f"{where}: project not in the trusted roster")
    member = roster.member(m.writer)
    if member is None:
        raise Rejected(
            reasons.UNKNOWN_WRITER, f"{where}: writer is not in roster v{roster.version}"
        )
    env.check(suite, "manifest", member.sign_public)
    digest = m.hash(suite)
    _check_grant(roster, m, digest, where)
    cited = state.rosters.get(m.roster_version)
    if cited is None:
        raise Rejected(
            reasons.ROSTER_UNKNOWN,
            f"{where} names roster v{m.roster_version}; the trusted one is v{roster.version}",
        )
    if state.keyring(m.project, m.epoch) is None or cited.projects.get(m.project) != m.epoch:
        raise Rejected(
            reasons.EPOCH_UNKNOWN,
            f"{where} uses epoch {m.epoch}, which has no trusted keyring or does not match "
            f"roster v{m.roster_version}; fetch the keyrings",
        )
    head = next_head(state, roster, m, digest, where)
    if head is None:
        return state, m
    _check_floor(state, roster, m, where)
    if not m.heads_known:
        m = with_heads(m, rebuild, where)
    _check_witnesses(state, m, digest, where)
    witnessed = dict(state.witnessed)
    for h in m.heads:
        seen = _witness(state, roster, h.writer, h.project)
        if seen is None or h.seq > seen.seq:
            witnessed[(h.writer, h.project)] = Witness(h.seq, h.hash, m.writer)
    heads = {**state.heads, (m.writer, m.project): head}
    return state.evolve(heads=heads, witnessed=witnessed), m


def _check_grant(roster: Roster, m: Manifest, digest: str, where: str) -> None:
    revocation = roster.revocation(m.writer)
    if revocation is not None:
        # Only the pinned manifest itself stays valid: it is a full snapshot, so it
        # holds every memory the writer had.  A lower seq cannot be checked against
        # the pin, and the revoked (maybe stolen) key could mint one for any reader
        # still behind the pin.
        pin = revocation.pins.get(m.project)
        if pin is None or m.seq != pin.seq or digest != pin.manifest_hash:
            raise Rejected(
                reasons.REVOKED,
                f"{where}: writer was revoked in roster v{revocation.at_version}"
                + (f"; only its pinned manifest (seq {pin.seq}) stays valid" if pin else ""),
            )
        return
    if not roster.can_write(m.writer, m.project):
        raise Rejected(
            reasons.NO_WRITE_GRANT,
            f"{where}: writer holds no write grant in roster v{roster.version}; "
            "an admin can grant it with 'sealmem admin grant'",
        )


def next_head(
    state: TrustedState, roster: Roster, m: Manifest, digest: str, where: str
) -> ChainHead | None:
    """The new chain head, or ``None`` if this manifest is the one already trusted."""
    reset = roster.latest_reset(m.writer, m.project)
    floor = reset.at_version if reset is not None else 0
    if m.roster_version < floor:
        raise Rejected(
            reasons.ROLLBACK,
            f"{where} predates the admin reset of this chain in roster v{floor}",
        )
    head = state.head(m.writer, m.project)
    if head is None:
        return ChainHead(m.seq, digest, floor)
    if m.prev is None and floor > head.reset_at:
        return ChainHead(m.seq, digest, floor)
    if m.seq < head.seq:
        raise Rejected(
            reasons.ROLLBACK,
            f"{where} is older than the trusted seq {head.seq} (stale or replayed)",
        )
    if m.seq == head.seq:
        if digest == head.hash:
            return None
        raise Rejected(reasons.FORK, f"{where}: a different manifest with this seq is trusted")
    if m.prev is None or (m.seq == head.seq + 1 and m.prev != head.hash):
        raise Rejected(
            reasons.FORK,
            f"{where} does not continue the trusted chain at seq {head.seq}; "
            "a restored writer needs an admin reset ('sealmem admin reset')",
        )
    return ChainHead(m.seq, digest, head.reset_at)


def _check_floor(state: TrustedState, roster: Roster, m: Manifest, where: str) -> None:
    """Witnessed heads are floors: a new head below the highest seq another writer's
    verified manifest witnessed for this chain is a replay (``behind-witness``).  A chain
    an admin reset is left to the reset rules (its old witnesses name the old chain)."""
    seen = _witness(state, roster, m.writer, m.project)
    if seen is None or m.seq >= seen.seq or roster.latest_reset(m.writer, m.project):
        return
    raise Rejected(
        reasons.BEHIND_WITNESS,
        f"{where} is below seq {seen.seq}, which {seen.by} witnessed for this writer: "
        "an old snapshot, replayed or not yet replaced by the newer one; sync again later "
        f"(if it stays, {seen.by} may witness a seq never published: an admin can revoke it)",
    )


def _witness(state: TrustedState, roster: Roster, writer: str, project: str) -> Witness | None:
    """What a member in good standing witnessed for (writer, project): a witness since
    revoked or removed from the trusted roster is no floor (or the writer it invented a
    seq for would stay frozen after the admins dealt with it)."""
    seen = state.witnessed.get((writer, project))
    if seen is None or roster.member(seen.by) is None or roster.revocation(seen.by):
        return None
    return seen


def _check_witnesses(state: TrustedState, m: Manifest, digest: str, where: str) -> None:
    roster = _current(state, "manifest")
    seen = _witness(state, roster, m.writer, m.project)
    if seen is not None and seen.seq == m.seq and seen.hash != digest:
        raise Rejected(
            reasons.EQUIVOCATION,
            f"{where} differs from the one {seen.by} witnessed at this seq",
        )
    for h in m.heads:
        ours = state.head(h.writer, h.project)
        if ours is not None and ours.seq == h.seq and ours.hash != h.hash:
            raise Rejected(
                reasons.EQUIVOCATION,
                f"{where} witnesses {h.writer}/{h.project} seq {h.seq} with another hash "
                "than the manifest we accepted: someone is showing members different histories",
            )
        other = _witness(state, roster, h.writer, h.project)
        if other is not None and other.seq == h.seq and other.hash != h.hash:
            raise Rejected(
                reasons.EQUIVOCATION,
                f"{where} and {other.by} witness different manifests for "
                f"{h.writer}/{h.project} seq {h.seq}",
            )
