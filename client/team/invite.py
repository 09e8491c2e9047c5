"""Invites and join requests (DESIGN §4): the two signed notes that let a member in.

An **invite** is made by the team root key (context ``invite``) and handed over
out of band as one line of text::

    sealmem-invite:<base64url(envelope)>
    body = {"format": "sealmem/invite/v1", "team", "root_public", "location",
            "transport", "created_at"}

The member compares the root fingerprint it prints with the admin's, then pins
``root_public``.  A **join request** is self-signed by the new member key
(context ``join``) and left in the folder's ``requests/``::

    body = {"format": "sealmem/join/v1", "team", "kid", "name", "sign_public",
            "box_public", "created_at"}

The admin shows its fingerprint and approves it only after comparing it with
the member out of band: the folder is untrusted, anyone could post a request.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...crypto import SUITE, MemberKey, PublicIdentity
from ...protocol import reasons
from ...protocol.encoding import b64d, b64e, exact_keys, need_b64, need_int, need_str
from ...protocol.envelope import seal, unpack
from ...protocol.errors import InputError, Rejected
from ...protocol.names import hidden_at, name_problem
from ...protocol.roster import TEAM_RE

__all__ = [
    "INVITE_PREFIX",
    "Invite",
    "JoinRequest",
    "fingerprint_of",
    "make_invite",
    "make_join_request",
    "read_invite",
    "read_join_request",
]

INVITE_PREFIX = "sealmem-invite:"
_INVITE_FORMAT = "sealmem/invite/v1"
_JOIN_FORMAT = "sealmem/join/v1"
_MAX_BYTES = 16 * 1024
_TRANSPORTS = ("folder", "hub")


def fingerprint_of(sign_public: bytes, box_public: bytes) -> str:
    return PublicIdentity.from_public_keys(sign_public, box_public).fingerprint()


@dataclass(frozen=True)
class Invite:
    team: str
    root_public: bytes
    root_box_public: bytes
    location: str
    transport: str
    created_at: int

    @property
    def root_fingerprint(self) -> str:
        return fingerprint_of(self.root_public, self.root_box_public)


def make_invite(root: MemberKey, *, team: str, location: str, transport: str, now: int) -> str:
    body = {
        "format": _INVITE_FORMAT,
        "team": team,
        "root_public": b64e(root.sign_public),
        "root_box_public": b64e(root.box_public),
        "location": location,
        "transport": transport,
        "created_at": now,
    }
    return INVITE_PREFIX + b64e(seal(body, "invite", root))


def read_invite(text: str) -> Invite:
    """Parse and check an invite line; :class:`InputError` says what is wrong with it."""
    text = text.strip()
    if not text.startswith(INVITE_PREFIX):
        raise InputError(
            f"this is not a sealmem invite (it must start with {INVITE_PREFIX!r}); "
            "ask the admin for the output of 'sealmem team invite'"
        )
    try:
        env = unpack(b64d(text[len(INVITE_PREFIX) :]), what="invite", max_bytes=_MAX_BYTES)
        keys = {"format", "team", "root_public", "root_box_public", "location", "transport"}
        body = exact_keys(env.body, keys | {"created_at"}, "invite")
        if body["format"] != _INVITE_FORMAT:
            raise Rejected(reasons.UNKNOWN_FORMAT, f"invite format {body['format']!r}")
        invite = Invite(
            team=need_str(body["team"], "invite.team", pattern=TEAM_RE),
            root_public=need_b64(body["root_public"], "invite.root_public", size=32),
            root_box_public=need_b64(body["root_box_public"], "invite.root_box_public", size=32),
            location=need_str(body["location"], "invite.location"),
            transport=need_str(body["transport"], "invite.transport"),
            created_at=need_int(body["created_at"], "invite.created_at"),
        )
        if invite.transport not in _TRANSPORTS:
            raise Rejected(reasons.MALFORMED, f"invite transport {invite.transport!r}")
        if any(hidden_at(invite.location, i) for i in range(len(invite.location))):
            raise Rejected(
                reasons.MALFORMED, f"invite location {invite.location!r} holds control characters"
            )
        if env.signer != SUITE.kid_from_public(invite.root_public):
            raise Rejected(reasons.SIGNER_MISMATCH, "invite is not signed by its root key")
        env.check(SUITE, "invite", invite.root_public)
    except (ValueError, Rejected) as exc:
        raise InputError(f"the invite is damaged or forged ({exc}); ask the admin again") from exc
    return invite


@dataclass(frozen=True)
class JoinRequest:
    team: str
    kid: str
    name: str
    sign_public: bytes
    box_public: bytes
    created_at: int

    @property
    def fingerprint(self) -> str:
        return fingerprint_of(self.sign_public, self.box_public)


def make_join_request(key: MemberKey, *, team: str, name: str, now: int) -> bytes:
    if problem := name_problem(name):
        raise InputError(f"the display name {name!r} {problem}; choose another with --name")
    body = {
        "format": _JOIN_FORMAT,
        "team": team,
        "kid": key.kid,
        "name": name,
        "sign_public": b64e(key.sign_public),
        "box_public": b64e(key.box_public),
        "created_at": now,
    }
    return seal(body, "join", key)


def read_join_request(data: bytes, team: str) -> JoinRequest:
    """Check a join request's shape, team and self-signature; raise ``Rejected``."""
    env = unpack(data, what="join request", max_bytes=_MAX_BYTES)
    keys = {"format", "team", "kid", "name", "sign_public", "box_public", "created_at"}
    body = exact_keys(env.body, keys, "join request")
    if body["format"] != _JOIN_FORMAT:
        raise Rejected(reasons.UNKNOWN_FORMAT, f"join request format {body['format']!r}")
    if body["team"] != team:
        raise Rejected(reasons.CROSS_TEAM, f"join request is for team {body['team']!r}")
    request = JoinRequest(
        team=team,
        kid=need_str(body["kid"], "join.kid"),
        name=need_str(body["name"], "join.name"),
        sign_public=need_b64(body["sign_public"], "join.sign_public", size=32),
        box_public=need_b64(body["box_public"], "join.box_public", size=32),
        created_at=need_int(body["created_at"], "join.created_at"),
    )
    if problem := name_problem(request.name):
        raise Rejected(reasons.MALFORMED, f"join request name {request.name!r} {problem}")
    if SUITE.kid_from_public(request.sign_public) != request.kid or env.signer != request.kid:
        raise Rejected(reasons.SIGNER_MISMATCH, "join request kid does not match its key")
    env.check(SUITE, "join", request.sign_public)
    return request
