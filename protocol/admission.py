"""The admin's check of join requests against the invites it issued (SPEC.md "Admission").

Pure: the registry of invites (:class:`InviteRecord`), roster and clock come in as
values; :func:`mark_invite_used` returns a new registry for the caller to store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from . import reasons
from .device_invite import DeviceJoin, check_device_admission, is_device_join, read_device_join
from .encoding import need_int, need_kid, need_list, need_str
from .errors import Rejected
from .invite import INVITE_ID_RE, Invite, JoinRequest, read_join_request
from .roster import Roster
from .suite import Suite

__all__ = [
    "MAX_INVITES",
    "InviteRecord",
    "RequestView",
    "check_request_against_invite",
    "classify_requests",
    "mark_invite_used",
]

MAX_INVITES = 65_536


@dataclass(frozen=True)
class InviteRecord:
    """What the admin remembers of an invite it issued."""

    invite_id: str
    created_at: int
    expires_at: int
    for_name: str | None = None
    used_by: tuple[str, ...] = ()

    @classmethod
    def of(cls, invite: Invite) -> InviteRecord:
        return cls(invite.invite_id, invite.created_at, invite.expires_at, invite.for_name)

    def to_json(self) -> dict[str, Any]:
        return {
            "invite_id": self.invite_id,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "for": self.for_name,
            "used_by": list(self.used_by),
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> InviteRecord:
        """Read a stored record; ``Rejected`` (``malformed``) names a broken field."""
        for_name = value.get("for")
        return cls(
            invite_id=need_str(value.get("invite_id"), "invite.invite_id", pattern=INVITE_ID_RE),
            created_at=need_int(value.get("created_at"), "invite.created_at"),
            expires_at=need_int(value.get("expires_at"), "invite.expires_at"),
            for_name=None if for_name is None else need_str(for_name, "invite.for"),
            used_by=tuple(
                need_kid(k, "invite.used_by[]")
                for k in need_list(value.get("used_by", []), "invite.used_by", max_len=MAX_INVITES)
            ),
        )


def check_request_against_invite(
    request: JoinRequest, record: InviteRecord | None, now_ms: int
) -> None:
    """Refuse ``request`` by name unless it answers ``record`` (the registry's entry for its
    invite, None if there is none) at ``now_ms``."""
    iid = request.invite_id
    if record is None:
        raise Rejected(
            reasons.INVITE_UNKNOWN,
            f"join request of {request.name!r} names invite {iid}, which this admin never "
            "issued; if the person is expected, send them a new invite ('sealmem team invite')",
        )
    if now_ms >= record.expires_at:
        raise Rejected(
            reasons.INVITE_EXPIRED,
            f"join request of {request.name!r} answers invite {iid}, which expired at "
            f"{record.expires_at} (now {now_ms}); send them a new invite ('sealmem team invite')",
        )
    if record.for_name is not None and any(k != request.kid for k in record.used_by):
        raise Rejected(
            reasons.INVITE_USED,
            f"invite {iid} was for one person and was already used by {record.used_by[0]}; "
            "send a new invite ('sealmem team invite --for NAME')",
        )
    if record.for_name is not None and request.name != record.for_name:
        raise Rejected(
            reasons.INVITE_NAME_MISMATCH,
            f"invite {iid} is for {record.for_name!r}, but the request asks for the name "
            f"{request.name!r}; the invitee must join with --name {record.for_name!r}",
        )


def mark_invite_used(
    registry: Mapping[str, InviteRecord], invite_id: str, kid: str
) -> dict[str, InviteRecord]:
    """A new registry where ``invite_id`` was used by ``kid`` (approval records this)."""
    out = dict(registry)
    record = out.get(invite_id)
    if record is not None and kid not in record.used_by:
        out[invite_id] = replace(record, used_by=(*record.used_by, kid))
    return out


@dataclass(frozen=True)
class RequestView:
    """One waiting join request as the admin sees it; ``refused`` says why it cannot pass."""

    kid: str
    name: str | None
    fingerprint: str | None
    invite_id: str | None
    created_at: int | None
    member: bool
    refused: tuple[str, str] | None
    request: JoinRequest | None = None
    device: DeviceJoin | None = None
    """Set for a device join request: a new device of an existing member."""

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "kid": self.kid,
            "name": self.name,
            "fingerprint": self.fingerprint,
            "invite_id": self.invite_id,
            "created_at": self.created_at,
            "member": self.member,
        }
        if self.device is not None:
            doc["device_of"] = self.device.member
            doc["introduced_by"] = self.device.invite_signer
        if self.refused is not None:
            doc["refused"], doc["detail"] = self.refused
        return doc


def classify_requests(
    suite: Suite,
    waiting: Mapping[str, bytes],
    registry: Mapping[str, InviteRecord],
    roster: Roster | None,
    team: str,
    now_ms: int,
    *,
    fingerprint: Callable[[bytes, bytes], str],
) -> list[RequestView]:
    """Every waiting request (by the kid it was filed under), checked and sorted by kid.

    A request from a key already in the roster is shown as ``member`` and not
    checked against the registry (approving it again is refused elsewhere).
    """
    out: list[RequestView] = []
    for kid in sorted(waiting):
        if is_device_join(waiting[kid]):
            out.append(_device_view(suite, kid, waiting[kid], roster, team, now_ms, fingerprint))
            continue
        try:
            req = read_join_request(suite, waiting[kid], team, filed_as=kid)
        except Rejected as exc:
            out.append(RequestView(kid, None, None, None, None, False, (exc.reason, exc.detail)))
            continue
        member = roster is not None and roster.member(req.kid) is not None
        refused: tuple[str, str] | None = None
        if not member:
            try:
                check_request_against_invite(req, registry.get(req.invite_id), now_ms)
            except Rejected as exc:
                refused = (exc.reason, exc.detail)
        out.append(
            RequestView(
                kid=req.kid,
                name=req.name,
                fingerprint=fingerprint(req.sign_public, req.box_public),
                invite_id=req.invite_id,
                created_at=req.created_at,
                member=member,
                refused=refused,
                request=req,
            )
        )
    return out


def _device_view(
    suite: Suite,
    kid: str,
    data: bytes,
    roster: Roster | None,
    team: str,
    now_ms: int,
    fingerprint: Callable[[bytes, bytes], str],
) -> RequestView:
    """A device join request as the admin sees it (SPEC "Enrolling a device"): checked
    against the roster (the invite's signer, expiry, single use); its name is the
    member's with the device's."""
    try:
        join = read_device_join(suite, data, team, filed_as=kid)
    except Rejected as exc:
        return RequestView(kid, None, None, None, None, False, (exc.reason, exc.detail))
    member = roster is not None and roster.member(join.kid) is not None
    refused: tuple[str, str] | None = None
    owner = None if roster is None else roster.member(join.member)
    if roster is None:
        refused = (reasons.ROSTER_UNKNOWN, "no trusted roster to check the device invite")
    elif not member:
        try:
            check_device_admission(join, roster, now_ms)
        except Rejected as exc:
            refused = (exc.reason, exc.detail)
    name = f"{owner.name if owner else join.member[:8]} ({join.name})"
    return RequestView(
        kid=join.kid, name=name, fingerprint=fingerprint(join.sign_public, join.box_public),
        invite_id=join.invite_id, created_at=join.created_at, member=member, refused=refused,
        device=join,
    )  # fmt: skip
