"""A member's private space (SPEC.md "Private memories and trust follow the member").

The member keyring (``sealmem/member-keyring/v1``): one content key per member and
epoch, wrapped to that member's unrevoked devices and signed by one of them, never by
an admin.  Its ``key_id`` and ``wraps`` are the Keyring's (:mod:`.keyring`).  A
device's private chain is a chain of private manifests (:data:`~.manifest.PRIVATE_FORMAT`)
whose chunks hold only private records; :func:`accept_private_manifest` trusts one
against the team's trusted roster and the member keyrings of :class:`PrivateState`.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from . import reasons
from .encoding import HEX_HASH_RE, b64e, exact_keys, need_int, need_kid, need_list, need_str
from .envelope import seal, unpack
from .errors import InputError, Rejected
from .keyring import MAX_KEYRING_BYTES, open_wrap, parse_wraps
from .manifest import MAX_MANIFEST_BYTES, Manifest
from .record import PROJECT_RE
from .roster import TEAM_RE, Member, Roster
from .state import ChainHead, TrustedState, frozen_map
from .suite import Signer, Suite, Wrapper
from .verify import check_team, next_head

_Key = TypeVar("_Key", bound=Wrapper)

__all__ = [
    "MEMBER_KEYRING_FORMAT",
    "MemberKeyring",
    "PrivateState",
    "accept_member_keyring",
    "accept_private_manifest",
    "build_member_keyring",
    "keyring_plan",
    "member_devices",
    "publishes_private",
]

MEMBER_KEYRING_FORMAT = "sealmem/member-keyring/v1"
_MAX_ITEMS = 1_000_000
_BODY_KEYS = frozenset({"format", "team", "member", "epoch", "roster_version", "key_id", "wraps"})


@dataclass(frozen=True, slots=True)
class MemberKeyring:
    team: str
    member: str
    epoch: int
    roster_version: int
    wraps: Mapping[str, bytes]
    key_id: str

    def to_body(self) -> dict[str, Any]:
        return {
            "format": MEMBER_KEYRING_FORMAT,
            "team": self.team,
            "member": self.member,
            "epoch": self.epoch,
            "roster_version": self.roster_version,
            "key_id": self.key_id,
            "wraps": {kid: b64e(w) for kid, w in self.wraps.items()},
        }

    def sign(self, signer: Signer) -> bytes:
        return seal(self.to_body(), "member-keyring", signer)

    def open_key(self, kid: str, unwrap: Callable[[bytes], _Key]) -> _Key:
        """``kid``'s member key, opened and checked against ``key_id`` (``tampered``)."""
        where = f"member keyring of {self.member} epoch {self.epoch}"
        key = open_wrap(self.wraps[kid], unwrap, f"{where}: the wrap for {kid} does not open")
        if key.commitment() != self.key_id:
            raise Rejected(reasons.TAMPERED, f"{where}: the wrapped key is not its key_id's")
        return key

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> MemberKeyring:
        if body.get("format") != MEMBER_KEYRING_FORMAT:
            raise Rejected(
                reasons.UNKNOWN_FORMAT,
                f"member keyring format {body.get('format')!r} is not {MEMBER_KEYRING_FORMAT!r}",
            )
        obj = exact_keys(body, _BODY_KEYS, "member keyring")
        return cls(
            team=need_str(obj["team"], "member keyring.team", pattern=TEAM_RE),
            member=need_kid(obj["member"], "member keyring.member"),
            epoch=need_int(obj["epoch"], "member keyring.epoch", minimum=1),
            roster_version=need_int(obj["roster_version"], "roster_version", minimum=1),
            wraps=parse_wraps(obj["wraps"], "member keyring"),
            key_id=need_str(obj["key_id"], "member keyring.key_id", pattern=HEX_HASH_RE),
        )  # fmt: skip


def member_devices(roster: Roster, member: str) -> tuple[Member, ...]:
    """The devices a member keyring of ``member`` is wrapped to in ``roster``: its
    unrevoked devices (none once the member is removed)."""
    person = roster.person(member)
    if person is not None and person.removed_at is not None:
        return ()
    return tuple(d for d in roster.devices_of(member) if roster.revocation(d.kid) is None)


def publishes_private(roster: Roster, kid: str) -> bool:
    """Whether device ``kid`` publishes a private chain: it is unrevoked and its member
    has another unrevoked device (a member with one machine publishes nothing private)."""
    me = roster.member(kid)
    if me is None:
        return False
    devices = {d.kid for d in member_devices(roster, me.id)}
    return kid in devices and len(devices) >= 2


def build_member_keyring(key: Wrapper, roster: Roster, member: str, epoch: int) -> MemberKeyring:
    """Wrap ``key`` to every unrevoked device of ``member`` in ``roster``."""
    devices = member_devices(roster, member)
    if not devices:
        raise InputError(f"member {member} has no unrevoked device in roster v{roster.version}")
    return MemberKeyring(
        team=roster.team,
        member=member,
        epoch=epoch,
        roster_version=roster.version,
        wraps={d.kid: key.wrap_to(d.box_public) for d in devices},
        key_id=key.commitment(),
    )


@dataclass(frozen=True, slots=True)
class PrivateState:
    """What a device trusts of its member's private space: the member keyrings it
    accepted, by (member, epoch), and the head of each sibling's private chain, by
    (writer, project)."""

    rings: Mapping[tuple[str, int], MemberKeyring] = field(default_factory=dict)
    heads: Mapping[tuple[str, str], ChainHead] = field(default_factory=dict)

    def current(self, member: str) -> MemberKeyring | None:
        """The highest accepted epoch of ``member``'s keyring."""
        mine = [r for (m, _), r in self.rings.items() if m == member]
        return max(mine, key=lambda r: r.epoch) if mine else None

    def to_wire(self) -> dict[str, Any]:
        return {
            "rings": [self.rings[k].to_body() for k in sorted(self.rings)],
            "heads": [
                {"writer": w, "project": p, "seq": h.seq, "hash": h.hash}
                for (w, p), h in sorted(self.heads.items())
            ],
        }

    @classmethod
    def from_wire(cls, value: object) -> PrivateState:
        obj = exact_keys(value, {"rings", "heads"}, "private state")
        rings = [
            MemberKeyring.from_body(b) for b in need_list(obj["rings"], "rings", max_len=_MAX_ITEMS)
        ]
        heads = {}
        for i, raw in enumerate(need_list(obj["heads"], "heads", max_len=_MAX_ITEMS)):
            h = exact_keys(raw, {"writer", "project", "seq", "hash"}, f"heads[{i}]")
            writer = need_kid(h["writer"], "writer")
            project = need_str(h["project"], "project", pattern=PROJECT_RE)
            seq = need_int(h["seq"], "seq", minimum=1)
            heads[writer, project] = ChainHead(
                seq, need_str(h["hash"], "hash", pattern=HEX_HASH_RE)
            )
        return cls(frozen_map({(r.member, r.epoch): r for r in rings}), frozen_map(heads))


def _roster(state: TrustedState, version: int | None, where: str) -> Roster:
    roster = state.roster if version is None else state.rosters.get(version)
    if roster is None:
        raise Rejected(reasons.ROSTER_UNKNOWN, f"{where}: its roster is not trusted yet")
    return roster


def accept_member_keyring(
    suite: Suite, state: TrustedState, private: PrivateState, data: bytes
) -> tuple[PrivateState, MemberKeyring]:
    """Accept a member keyring signed by an unrevoked device of its member, wrapped only
    to that member's unrevoked devices in the roster it cites; a second one for a known
    epoch follows the Keyring's update rules (same key, newer roster, wraps kept)."""
    env = unpack(data, what="member keyring", max_bytes=MAX_KEYRING_BYTES)
    check_team(state, env.body, "member keyring")
    ring = MemberKeyring.from_body(env.body)
    where = f"member keyring of {ring.member} epoch {ring.epoch}"
    current = _roster(state, None, where)
    cited = _roster(state, ring.roster_version, where)
    signer = cited.member(env.signer)
    if signer is None or signer.id != ring.member:
        raise Rejected(
            reasons.SIGNER_MISMATCH, f"{where} is signed by {env.signer}, no device of its member"
        )
    env.check(suite, "member-keyring", signer.sign_public)
    if current.revocation(env.signer) is not None or cited.revocation(env.signer) is not None:
        raise Rejected(reasons.REVOKED, f"{where} is signed by revoked device {env.signer}")
    readers = {d.kid for d in member_devices(cited, ring.member)}
    for kid in ring.wraps:
        if kid not in readers:
            raise Rejected(
                reasons.NO_READ_GRANT, f"{where} wraps the key to {kid}, no device of its member"
            )
    known = private.rings.get((ring.member, ring.epoch))
    if known is not None:
        if known == ring:
            return private, known
        _check_update(known, ring, readers, where)
    rings = {**private.rings, (ring.member, ring.epoch): ring}
    return replace(private, rings=frozen_map(rings)), ring


def _check_update(known: MemberKeyring, ring: MemberKeyring, readers: set[str], where: str) -> None:
    if ring.key_id != known.key_id:
        raise Rejected(reasons.FORK, f"{where} commits to another key than the trusted one")
    if ring.roster_version < known.roster_version:
        raise Rejected(reasons.ROLLBACK, f"{where} cites an older roster than the trusted one")
    if ring.roster_version == known.roster_version:
        raise Rejected(reasons.FORK, f"{where}: another keyring citing this roster is trusted")
    if any(kid in readers and kid not in ring.wraps for kid in known.wraps):
        raise Rejected(reasons.FORK, f"{where} drops a wrap of a device that may still read")


def keyring_plan(roster: Roster, private: PrivateState, kid: str) -> str:
    """What device ``kid`` does about its member keyring before it publishes private
    records: ``"none"`` (publishes nothing private, or the current keyring wraps exactly
    the member's devices), ``"extend"`` (wrap the current key to a new device),
    ``"rotate"`` (no keyring yet, or one wraps a device revoked since: a new epoch)."""
    if not publishes_private(roster, kid):
        return "none"
    member = roster.member(kid)
    assert member is not None  # publishes_private checked it
    ring = private.current(member.id)
    devices = {d.kid for d in member_devices(roster, member.id)}
    if ring is None or not set(ring.wraps) <= devices:
        return "rotate"
    return "none" if set(ring.wraps) == devices else "extend"


def accept_private_manifest(
    suite: Suite,
    state: TrustedState,
    private: PrivateState,
    data: bytes,
    *,
    member: str,
    writer: str | None = None,
    project: str | None = None,
) -> tuple[PrivateState, Manifest]:
    """Accept a manifest of a private chain filed under ``member``'s private slot: signed
    by an unrevoked device of ``member``, under an accepted member keyring epoch, with the
    chain rules of Manifest (rollback, fork) on the private chain's own head."""
    env = unpack(data, what="manifest", max_bytes=MAX_MANIFEST_BYTES)
    check_team(state, env.body, "manifest")
    m = Manifest.from_body(env.body)
    where = f"private manifest {m.writer}/{m.project} seq {m.seq}"
    if not m.private:
        raise Rejected(reasons.MALFORMED, f"{where}: a team manifest in a private slot")
    if project is not None and m.project != project:
        raise Rejected(reasons.CROSS_PROJECT, f"{where} was served as one of {project!r}")
    roster = _roster(state, None, where)
    device = roster.member(m.writer)
    if device is None:
        raise Rejected(reasons.UNKNOWN_WRITER, f"{where}: writer is not in the trusted roster")
    if m.writer != env.signer or device.id != member or writer not in (None, m.writer):
        raise Rejected(
            reasons.SIGNER_MISMATCH, f"{where} is signed by {env.signer}, filed under {member}"
        )
    env.check(suite, "manifest", device.sign_public)
    if roster.revocation(m.writer) is not None:
        raise Rejected(reasons.REVOKED, f"{where}: its device is revoked")
    _roster(state, m.roster_version, where)
    if (member, m.epoch) not in private.rings:
        raise Rejected(reasons.EPOCH_UNKNOWN, f"{where}: no trusted member keyring epoch {m.epoch}")
    siblings = roster.siblings(m.writer)
    if any(h.writer not in siblings for h in m.heads):
        raise Rejected(reasons.MALFORMED, f"{where}: its heads name a chain of another member")
    digest = m.hash(suite)
    head = next_head(state.evolve(heads=private.heads), roster, m, digest, where)
    if head is None:
        return private, m
    heads = {**private.heads, (m.writer, m.project): head}
    return replace(private, heads=frozen_map(heads)), m
