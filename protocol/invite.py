"""Invites and join requests (SPEC.md "Invite and join request"): build, parse, verify.

The **joiner** checks an invite with its own clock (:func:`read_invite`); the **hub**
checks only a join request's shape, team and self-signature (:func:`read_join_request`);
the **admin** also checks it against the invites it issued
(:mod:`sealmem.protocol.admission`).  Pure: keys come in as bytes, signatures go
through a :class:`~.suite.Suite`, randomness and the clock are arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import reasons
from .encoding import INVITE_ID_RE, b64e, exact_keys, need_b64, need_int, need_kid, need_str
from .envelope import seal, unpack
from .errors import InputError, Rejected
from .hlc import MAX_AHEAD_MS
from .names import hidden_at, name_problem
from .roster import TEAM_RE
from .suite import RandomSource, Signer, Suite

__all__ = [
    "DAY_MS",
    "DEFAULT_INVITE_MS",
    "INVITE_FORMAT",
    "INVITE_ID_RE",
    "JOIN_FORMAT",
    "MAX_INVITE_MS",
    "MAX_JOIN_BYTES",
    "Invite",
    "JoinRequest",
    "new_invite_id",
    "read_invite",
    "read_join_request",
    "seal_invite",
    "seal_join_request",
]

INVITE_FORMAT = "sealmem/invite/v2"
JOIN_FORMAT = "sealmem/join/v2"
_OLD_FORMATS = ("sealmem/invite/v1", "sealmem/join/v1")
MAX_JOIN_BYTES = 16 * 1024
DAY_MS = 86_400_000
DEFAULT_INVITE_MS = 7 * DAY_MS
MAX_INVITE_MS = 30 * DAY_MS
INVITE_ID_BYTES = 16
TRANSPORTS = ("folder", "hub")
_INVITE_KEYS = frozenset(
    {"format", "team", "root_public", "root_box_public", "location", "transport"}
    | {"created_at", "expires_at", "invite_id"}
)
_JOIN_KEYS = frozenset(
    {"format", "team", "kid", "name", "sign_public", "box_public", "created_at", "invite_id"}
)


def new_invite_id(random: RandomSource) -> str:
    """128 random bits as 22 characters of unpadded base64url."""
    return b64e(random(INVITE_ID_BYTES))


@dataclass(frozen=True)
class Invite:
    team: str
    root_public: bytes
    root_box_public: bytes
    location: str
    transport: str
    created_at: int
    expires_at: int
    invite_id: str
    for_name: str | None = None


def seal_invite(invite: Invite, root: Signer) -> bytes:
    """The invite envelope, signed by the team root key; :class:`InputError` for a
    lifetime out of range or an invitee name that breaks the rules."""
    lifetime = invite.expires_at - invite.created_at
    if not 0 < lifetime <= MAX_INVITE_MS:
        raise InputError(
            f"an invite lifetime of {lifetime} ms is refused: it must be more than 0 "
            f"and at most {MAX_INVITE_MS // DAY_MS} days (--expires)"
        )
    if invite.for_name is not None and (problem := name_problem(invite.for_name)):
        raise InputError(f"the invitee name {invite.for_name!r} {problem}; choose another --for")
    body: dict[str, Any] = {
        "format": INVITE_FORMAT,
        "team": invite.team,
        "root_public": b64e(invite.root_public),
        "root_box_public": b64e(invite.root_box_public),
        "location": invite.location,
        "transport": invite.transport,
        "created_at": invite.created_at,
        "expires_at": invite.expires_at,
        "invite_id": invite.invite_id,
    }
    if invite.for_name is not None:
        body["for"] = invite.for_name
    return seal(body, "invite", root)


def _format_of(body: dict[str, Any], expected: str, what: str) -> None:
    fmt = body.get("format")
    if fmt == expected:
        return
    if fmt in _OLD_FORMATS:
        raise Rejected(
            reasons.UNKNOWN_FORMAT,
            f"{what} format {fmt!r} is from an older sealmem: it names no invite and never "
            "expires; ask the admin for a new invite ('sealmem team invite')",
        )
    raise Rejected(reasons.UNKNOWN_FORMAT, f"{what} format {fmt!r}; expected {expected!r}")


def read_invite(suite: Suite, data: bytes, *, now_ms: int) -> Invite:
    """Check an invite envelope as its joiner does, at ``now_ms``; raise ``Rejected``."""
    env = unpack(data, what="invite", max_bytes=MAX_JOIN_BYTES)
    body = env.body
    _format_of(body, INVITE_FORMAT, "invite")
    exact_keys(body, _INVITE_KEYS | ({"for"} & body.keys()), "invite")
    for_name = body.get("for")
    invite = Invite(
        team=need_str(body["team"], "invite.team", pattern=TEAM_RE),
        root_public=need_b64(body["root_public"], "invite.root_public", size=32),
        root_box_public=need_b64(body["root_box_public"], "invite.root_box_public", size=32),
        location=need_str(body["location"], "invite.location"),
        transport=need_str(body["transport"], "invite.transport"),
        created_at=need_int(body["created_at"], "invite.created_at"),
        expires_at=need_int(body["expires_at"], "invite.expires_at"),
        invite_id=need_str(body["invite_id"], "invite.invite_id", pattern=INVITE_ID_RE),
        for_name=None if for_name is None else need_str(for_name, "invite.for"),
    )
    if invite.transport not in TRANSPORTS:
        raise Rejected(reasons.MALFORMED, f"invite transport {invite.transport!r}")
    if any(hidden_at(invite.location, i) for i in range(len(invite.location))):
        raise Rejected(
            reasons.MALFORMED, f"invite location {invite.location!r} holds control characters"
        )
    if invite.for_name is not None and (problem := name_problem(invite.for_name)):
        raise Rejected(reasons.MALFORMED, f"invite.for {invite.for_name!r} {problem}")
    lifetime = invite.expires_at - invite.created_at
    if not 0 < lifetime <= MAX_INVITE_MS:
        raise Rejected(
            reasons.MALFORMED,
            f"invite lifetime is {lifetime} ms (created_at {invite.created_at}, expires_at "
            f"{invite.expires_at}); it must be more than 0 and at most {MAX_INVITE_MS} ms",
        )
    if env.signer != suite.kid_from_public(invite.root_public):
        raise Rejected(reasons.SIGNER_MISMATCH, "invite is not signed by its root key")
    env.check(suite, "invite", invite.root_public)
    if invite.created_at > now_ms + MAX_AHEAD_MS:
        raise Rejected(
            reasons.CLOCK_AHEAD,
            f"invite is dated {invite.created_at}, more than {MAX_AHEAD_MS} ms after this "
            f"machine's clock ({now_ms}); check the clock here or ask the admin for a new invite",
        )
    if now_ms >= invite.expires_at:
        raise Rejected(
            reasons.INVITE_EXPIRED,
            f"invite {invite.invite_id} expired at {invite.expires_at} (now {now_ms}); "
            "ask the admin for a new one ('sealmem team invite')",
        )
    return invite


@dataclass(frozen=True)
class JoinRequest:
    team: str
    kid: str
    name: str
    sign_public: bytes
    box_public: bytes
    created_at: int
    invite_id: str


def seal_join_request(request: JoinRequest, key: Signer) -> bytes:
    """The join request envelope, self-signed by the key it introduces; :class:`InputError`
    for a name that breaks the rules."""
    if problem := name_problem(request.name):
        raise InputError(f"the display name {request.name!r} {problem}; choose another with --name")
    body = {
        "format": JOIN_FORMAT,
        "team": request.team,
        "kid": request.kid,
        "name": request.name,
        "sign_public": b64e(request.sign_public),
        "box_public": b64e(request.box_public),
        "created_at": request.created_at,
        "invite_id": request.invite_id,
    }
    return seal(body, "join", key)


def read_join_request(
    suite: Suite, data: bytes, team: str, *, filed_as: str | None = None
) -> JoinRequest:
    """Check a join request's shape, team and self-signature; raise ``Rejected``.

    ``filed_as`` is the member id the transport filed it under (hub path, folder
    file name); a request filed under another id is ``signer-mismatch``.  This is
    all the hub can check: whether it answers a real invite is the admin's check.
    """
    env = unpack(data, what="join request", max_bytes=MAX_JOIN_BYTES)
    body = env.body
    _format_of(body, JOIN_FORMAT, "join request")
    exact_keys(body, _JOIN_KEYS, "join request")
    if body["team"] != team:
        raise Rejected(reasons.CROSS_TEAM, f"join request is for team {body['team']!r}")
    request = JoinRequest(
        team=team,
        kid=need_kid(body["kid"], "join.kid"),
        name=need_str(body["name"], "join.name"),
        sign_public=need_b64(body["sign_public"], "join.sign_public", size=32),
        box_public=need_b64(body["box_public"], "join.box_public", size=32),
        created_at=need_int(body["created_at"], "join.created_at"),
        invite_id=need_str(body["invite_id"], "join.invite_id", pattern=INVITE_ID_RE),
    )
    if problem := name_problem(request.name):
        raise Rejected(reasons.MALFORMED, f"join request name {request.name!r} {problem}")
    ids = {request.kid, env.signer, suite.kid_from_public(request.sign_public)}
    if filed_as is not None:
        ids.add(filed_as)
    if len(ids) != 1:
        where = "" if filed_as is None else f" filed as {filed_as}"
        raise Rejected(
            reasons.SIGNER_MISMATCH,
            f"the join request{where} is for {request.kid}, signed by {env.signer}, "
            f"key of {suite.kid_from_public(request.sign_public)}",
        )
    env.check(suite, "join", request.sign_public)
    return request
