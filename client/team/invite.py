"""Invites and join requests, client side: the text form, and sealing with the member key.

The rules (fields, expiry, single use, what a joiner, the hub and an admin
check) live in :mod:`sealmem.protocol.invite` and :mod:`sealmem.protocol.admission`;
this module only signs with a :class:`~sealmem.crypto.MemberKey`, reads the
clock and the CSPRNG, and turns refusals into messages for people.  An invite
travels as one line::

    sealmem-invite:<base64url(envelope)>

The member compares the root fingerprint it prints with the admin's, then pins
``root_public``.  The admin shows a request's fingerprint and approves it only
after comparing it with the member out of band: the folder is untrusted,
anyone could post a request.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...crypto import SUITE, MemberKey, PublicIdentity, random_bytes
from ...protocol import admission, reasons
from ...protocol.admission import InviteRecord, RequestView
from ...protocol.encoding import b64d, b64e
from ...protocol.errors import InputError, Rejected
from ...protocol.invite import Invite, JoinRequest, new_invite_id, seal_invite, seal_join_request
from ...protocol.invite import read_invite as check_invite
from ...protocol.roster import Roster

__all__ = [
    "INVITE_PREFIX",
    "classify_requests",
    "fingerprint_of",
    "line_bytes",
    "make_invite",
    "make_join_request",
    "read_invite",
    "root_fingerprint",
]

INVITE_PREFIX = "sealmem-invite:"


def fingerprint_of(sign_public: bytes, box_public: bytes) -> str:
    return PublicIdentity.from_public_keys(sign_public, box_public).fingerprint()


def root_fingerprint(invite: Invite) -> str:
    return fingerprint_of(invite.root_public, invite.root_box_public)


def make_invite(
    root: MemberKey,
    *,
    team: str,
    location: str,
    transport: str,
    now: int,
    lifetime_ms: int,
    for_name: str | None = None,
) -> tuple[str, Invite]:
    """A fresh invite, with a random id, and its text form."""
    invite = Invite(
        team=team,
        root_public=root.sign_public,
        root_box_public=root.box_public,
        location=location,
        transport=transport,
        created_at=now,
        expires_at=now + lifetime_ms,
        invite_id=new_invite_id(random_bytes),
        for_name=for_name,
    )
    return INVITE_PREFIX + b64e(seal_invite(invite, root)), invite


def line_bytes(text: str, prefix: str, what: str, source: str, again: str) -> bytes:
    """The envelope of a pasted one-line ``what`` (``prefix`` then base64url); ``source``
    says where a right line comes from, ``again`` what to do with a damaged one."""
    text = text.strip()
    if not text.startswith(prefix):
        raise InputError(f"this is not a sealmem {what} (it must start with {prefix!r}); {source}")
    try:
        return b64d(text[len(prefix) :])
    except ValueError as exc:
        raise InputError(f"the {what} is damaged (not base64url); {again}") from exc


def read_invite(text: str, *, now: int) -> Invite:
    """Parse and check an invite line at ``now``; :class:`InputError` says what is wrong."""
    data = line_bytes(
        text, INVITE_PREFIX, "invite", "ask the admin for the output of 'sealmem team invite'",
        "ask the admin again",
    )  # fmt: skip
    try:
        return check_invite(SUITE, data, now_ms=now)
    except Rejected as exc:
        if exc.reason in (reasons.INVITE_EXPIRED, reasons.UNKNOWN_FORMAT, reasons.CLOCK_AHEAD):
            raise InputError(f"the invite is refused: {exc.detail}") from exc
        raise InputError(f"the invite is damaged or forged ({exc}); ask the admin again") from exc


def make_join_request(key: MemberKey, *, team: str, name: str, invite_id: str, now: int) -> bytes:
    """A join request for ``team`` answering invite ``invite_id``, self-signed by ``key``."""
    request = JoinRequest(
        team=team,
        kid=key.kid,
        name=name,
        sign_public=key.sign_public,
        box_public=key.box_public,
        created_at=now,
        invite_id=invite_id,
    )
    return seal_join_request(request, key)


def classify_requests(
    waiting: Mapping[str, bytes],
    registry: Mapping[str, InviteRecord],
    roster: Roster | None,
    team: str,
    now: int,
) -> list[RequestView]:
    """Every waiting join request (kid -> bytes) as the admin sees it, refused ones by name.

    ``registry`` is this admin's invites (``registry.load_registry``); after an
    approval, store ``mark_invite_used(registry, view.invite_id, view.kid)``.
    """
    return admission.classify_requests(
        SUITE, waiting, registry, roster, team, now, fingerprint=fingerprint_of
    )
