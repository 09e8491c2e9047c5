"""Device invites and device join requests (SPEC.md "Enrolling a device"): build, parse,
verify.

A member's existing device signs a **device invite** (``sealmem/device-invite/v1``,
context ``device-invite``); the new machine checks it with its own clock
(:func:`read_device_invite`) and posts a **device join request**
(``sealmem/device-join/v1``, context ``device-join``) that carries the invite, filed as a
join request.  The hub checks the request's shape, self-signature and embedded invite
(:func:`read_device_join`); with a roster, :func:`check_device_join` checks the invite's
signer is a device of the member, and an admin's :func:`check_device_admission` adds the
invite's expiry and single use (the roster is the registry).  Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import reasons
from .encoding import (
    HEX_HASH_RE,
    INVITE_ID_RE,
    b64e,
    exact_keys,
    need_b64,
    need_int,
    need_kid,
    need_str,
)
from .envelope import seal, unpack
from .errors import InputError, Rejected
from .hlc import MAX_AHEAD_MS
from .invite import TRANSPORTS
from .names import hidden_at, name_problem
from .roster import TEAM_RE, Roster
from .suite import Signer, Suite

__all__ = [
    "DEVICE_INVITE_FORMAT",
    "DEVICE_INVITE_PREFIX",
    "DEVICE_JOIN_FORMAT",
    "MAX_DEVICE_INVITE_BYTES",
    "MAX_DEVICE_INVITE_MS",
    "DeviceInvite",
    "DeviceJoin",
    "check_device_admission",
    "check_device_join",
    "is_device_join",
    "parse_device_invite",
    "read_device_invite",
    "read_device_join",
    "seal_device_invite",
    "seal_device_join",
]

DEVICE_INVITE_FORMAT = "sealmem/device-invite/v1"
DEVICE_JOIN_FORMAT = "sealmem/device-join/v1"
DEVICE_INVITE_PREFIX = "sealmem-device-invite:"
MAX_DEVICE_INVITE_BYTES = 8 * 1024
MAX_DEVICE_INVITE_MS = 86_400_000
MAX_DEVICE_JOIN_BYTES = 16 * 1024  # MAX_JOIN_BYTES: a device join is filed as a join request
_INVITE_KEYS = frozenset(
    {"format", "team", "member", "name", "signer_public", "root_public", "root_box_public"}
    | {"location", "transport", "roster_version", "roster_hash", "created_at", "expires_at"}
    | {"invite_id"}
)
_JOIN_KEYS = frozenset(
    {"format", "team", "member", "kid", "name", "sign_public", "box_public", "created_at"}
    | {"invite"}
)


@dataclass(frozen=True)
class DeviceInvite:
    team: str
    member: str
    name: str
    signer_public: bytes
    root_public: bytes
    root_box_public: bytes
    location: str
    transport: str
    roster_version: int
    roster_hash: str
    created_at: int
    expires_at: int
    invite_id: str

    def to_body(self) -> dict[str, Any]:
        return {
            "format": DEVICE_INVITE_FORMAT,
            "team": self.team,
            "member": self.member,
            "name": self.name,
            "signer_public": b64e(self.signer_public),
            "root_public": b64e(self.root_public),
            "root_box_public": b64e(self.root_box_public),
            "location": self.location,
            "transport": self.transport,
            "roster_version": self.roster_version,
            "roster_hash": self.roster_hash,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "invite_id": self.invite_id,
        }


def seal_device_invite(invite: DeviceInvite, device: Signer) -> bytes:
    """The device invite envelope, signed by the member's existing ``device``;
    :class:`InputError` for a lifetime out of range or a device name that breaks the rules."""
    lifetime = invite.expires_at - invite.created_at
    if not 0 < lifetime <= MAX_DEVICE_INVITE_MS:
        raise InputError(
            f"a device invite lifetime of {lifetime} ms is refused: it must be more than 0 "
            "and at most one day"
        )
    if problem := name_problem(invite.name):
        raise InputError(f"the device name {invite.name!r} {problem}; choose another")
    return seal(invite.to_body(), "device-invite", device)


def _format(body: dict[str, Any], expected: str, what: str) -> None:
    if body.get("format") != expected:
        raise Rejected(
            reasons.UNKNOWN_FORMAT, f"{what} format {body.get('format')!r}; expected {expected!r}"
        )


def parse_device_invite(suite: Suite, data: bytes) -> DeviceInvite:
    """Shape, lifetime and signature of a device invite envelope (no clock: an invite
    read again after it was used, by the new device's first sync)."""
    env = unpack(data, what="device invite", max_bytes=MAX_DEVICE_INVITE_BYTES)
    body = env.body
    _format(body, DEVICE_INVITE_FORMAT, "device invite")
    exact_keys(body, _INVITE_KEYS, "device invite")
    inv = DeviceInvite(
        team=need_str(body["team"], "device_invite.team", pattern=TEAM_RE),
        member=need_kid(body["member"], "device_invite.member"),
        name=need_str(body["name"], "device_invite.name"),
        signer_public=need_b64(body["signer_public"], "device_invite.signer_public", size=32),
        root_public=need_b64(body["root_public"], "device_invite.root_public", size=32),
        root_box_public=need_b64(body["root_box_public"], "device_invite.root_box_public", size=32),
        location=need_str(body["location"], "device_invite.location"),
        transport=need_str(body["transport"], "device_invite.transport"),
        roster_version=need_int(body["roster_version"], "device_invite.roster_version", minimum=1),
        roster_hash=need_str(body["roster_hash"], "device_invite.roster_hash", pattern=HEX_HASH_RE),
        created_at=need_int(body["created_at"], "device_invite.created_at"),
        expires_at=need_int(body["expires_at"], "device_invite.expires_at"),
        invite_id=need_str(body["invite_id"], "device_invite.invite_id", pattern=INVITE_ID_RE),
    )
    if inv.transport not in TRANSPORTS:
        raise Rejected(reasons.MALFORMED, f"device invite transport {inv.transport!r}")
    if any(hidden_at(inv.location, i) for i in range(len(inv.location))):
        raise Rejected(reasons.MALFORMED, "device invite location holds control characters")
    if problem := name_problem(inv.name):
        raise Rejected(reasons.MALFORMED, f"device invite name {inv.name!r} {problem}")
    lifetime = inv.expires_at - inv.created_at
    if not 0 < lifetime <= MAX_DEVICE_INVITE_MS:
        raise Rejected(
            reasons.MALFORMED,
            f"device invite lifetime is {lifetime} ms; it must be 1..{MAX_DEVICE_INVITE_MS} ms",
        )
    if env.signer != suite.kid_from_public(inv.signer_public):
        raise Rejected(
            reasons.SIGNER_MISMATCH,
            f"device invite is signed by {env.signer}, not by the key it names as its signer",
        )
    env.check(suite, "device-invite", inv.signer_public)
    return inv


def read_device_invite(suite: Suite, data: bytes, *, now_ms: int) -> DeviceInvite:
    """Check a device invite as the new machine does, at ``now_ms``; raise ``Rejected``."""
    inv = parse_device_invite(suite, data)
    if inv.created_at > now_ms + MAX_AHEAD_MS:
        raise Rejected(
            reasons.CLOCK_AHEAD,
            f"device invite is dated {inv.created_at}, more than {MAX_AHEAD_MS} ms after this "
            f"machine's clock ({now_ms}); check the clock here or on the other device",
        )
    if now_ms >= inv.expires_at:
        raise Rejected(
            reasons.INVITE_EXPIRED,
            f"device invite {inv.invite_id} expired at {inv.expires_at} (now {now_ms}); run "
            "'sealmem device add NAME' on your other device again",
        )
    return inv


@dataclass(frozen=True)
class DeviceJoin:
    team: str
    member: str
    kid: str
    name: str
    sign_public: bytes
    box_public: bytes
    created_at: int
    invite: DeviceInvite
    invite_data: bytes
    invite_signer: str

    @property
    def invite_id(self) -> str:
        return self.invite.invite_id


def seal_device_join(
    *, team: str, key: Signer, sign_public: bytes, box_public: bytes, created_at: int,
    invite_data: bytes, invite: DeviceInvite,
) -> bytes:  # fmt: skip
    """The device join request, self-signed by the new device's ``key``."""
    body = {
        "format": DEVICE_JOIN_FORMAT,
        "team": team,
        "member": invite.member,
        "kid": key.kid,
        "name": invite.name,
        "sign_public": b64e(sign_public),
        "box_public": b64e(box_public),
        "created_at": created_at,
        "invite": b64e(invite_data),
    }
    return seal(body, "device-join", key)


def is_device_join(data: bytes) -> bool:
    """Whether join-request bytes claim to be a device join (a cheap look at the format)."""
    return DEVICE_JOIN_FORMAT.encode() in data[:4096]


def read_device_join(
    suite: Suite, data: bytes, team: str, *, filed_as: str | None = None
) -> DeviceJoin:
    """What the hub and an admin check of a device join request without a roster: shape,
    team, self-signature, and the embedded invite (shape, signature, team, name)."""
    env = unpack(data, what="device join request", max_bytes=MAX_DEVICE_JOIN_BYTES)
    body = env.body
    _format(body, DEVICE_JOIN_FORMAT, "device join request")
    exact_keys(body, _JOIN_KEYS, "device join request")
    if body["team"] != team:
        raise Rejected(reasons.CROSS_TEAM, f"device join request is for team {body['team']!r}")
    sign_public = need_b64(body["sign_public"], "device_join.sign_public", size=32)
    kid = need_kid(body["kid"], "device_join.kid")
    ids = {kid, env.signer, suite.kid_from_public(sign_public)} | (
        {filed_as} if filed_as is not None else set()
    )
    if len(ids) != 1:
        raise Rejected(
            reasons.SIGNER_MISMATCH,
            f"the device join request is for {kid}, signed by {env.signer}"
            + ("" if filed_as is None else f", filed as {filed_as}"),
        )
    env.check(suite, "device-join", sign_public)
    invite_data = need_b64(body["invite"], "device_join.invite")
    invite = parse_device_invite(suite, invite_data)
    if invite.team != team:
        raise Rejected(reasons.CROSS_TEAM, f"the device invite is for team {invite.team!r}")
    join = DeviceJoin(
        team=team,
        member=need_kid(body["member"], "device_join.member"),
        kid=kid,
        name=need_str(body["name"], "device_join.name"),
        sign_public=sign_public,
        box_public=need_b64(body["box_public"], "device_join.box_public", size=32),
        created_at=need_int(body["created_at"], "device_join.created_at"),
        invite=invite,
        invite_data=invite_data,
        invite_signer=suite.kid_from_public(invite.signer_public),
    )
    if join.member != invite.member:
        raise Rejected(
            reasons.SIGNER_MISMATCH,
            f"the device join request is for member {join.member}, its invite for {invite.member}",
        )
    if join.name != invite.name:
        raise Rejected(
            reasons.INVITE_NAME_MISMATCH,
            f"the device invite names the device {invite.name!r}, the request {join.name!r}",
        )
    return join


def check_device_join(join: DeviceJoin, roster: Roster) -> None:
    """The invite's signer is an unrevoked device of the member, listed with the key the
    invite names; and the member is not removed.  ``signer-mismatch`` / ``revoked``."""
    signer = roster.member(join.invite_signer)
    if (
        signer is None
        or signer.id != join.member
        or signer.sign_public != join.invite.signer_public
    ):
        raise Rejected(
            reasons.SIGNER_MISMATCH,
            f"the device invite is signed by {join.invite_signer}, which is not a device of "
            f"member {join.member} in roster v{roster.version}",
        )
    revoked = roster.revocation(join.invite_signer)
    person = roster.person(join.member)
    if revoked is not None or (person is not None and person.removed_at is not None):
        raise Rejected(
            reasons.REVOKED,
            f"the device invite is signed by {join.invite_signer}, revoked in roster "
            f"v{revoked.at_version if revoked else person.removed_at if person else '?'}",
        )
    if roster.member(join.kid) is not None:
        raise Rejected(reasons.MALFORMED, f"device {join.kid} is already in the roster")


def check_device_admission(join: DeviceJoin, roster: Roster, now_ms: int) -> None:
    """An admin's check before approving: :func:`check_device_join`, then the invite not
    dated ahead of the admin's clock beyond the skew invites allow (``clock-ahead``), not
    expired (``invite-expired``) and not used by a device the roster lists (``invite-used``)."""
    check_device_join(join, roster)
    if join.invite.created_at > now_ms + MAX_AHEAD_MS:
        raise Rejected(
            reasons.CLOCK_AHEAD,
            f"the device invite {join.invite_id} is dated {join.invite.created_at}, more than "
            f"{MAX_AHEAD_MS} ms after this machine's clock ({now_ms}); check the clock here "
            "or on the device that printed the invite",
        )
    if now_ms >= join.invite.expires_at:
        raise Rejected(
            reasons.INVITE_EXPIRED,
            f"the device invite {join.invite_id} expired at {join.invite.expires_at} (now "
            f"{now_ms}); run 'sealmem device add' on the other device again",
        )
    for person in roster.people:
        for d in person.devices:
            if d.introduced_by is not None and d.introduced_by.invite_id == join.invite_id:
                raise Rejected(
                    reasons.INVITE_USED,
                    f"the device invite {join.invite_id} was already used by device {d.kid}; "
                    "a device invite admits one device: run 'sealmem device add' again",
                )
