"""Vectors for invites, join requests and the admin's admission check (SPEC.md
"Invite and join request").

``invite`` cases are checked as a joiner does at ``now_ms``; ``join`` cases as
the hub and the admin check a request's shape, team and self-signature;
``admission`` cases check a valid join request against an admin's invite
registry at ``now_ms``.
"""

from __future__ import annotations

from typing import Any

from sealmem.crypto import MemberKey
from sealmem.protocol.admission import InviteRecord
from sealmem.protocol.encoding import b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.invite import DAY_MS, INVITE_FORMAT, JOIN_FORMAT, MAX_INVITE_MS

from .basics import NOW, TEAM, Vector

__all__ = ["admission_vectors", "invite_family", "invite_vectors", "join_vectors"]

INVITE_ID = b64e(bytes(range(16)))
OTHER_ID = b64e(bytes(range(16, 32)))
EXPIRES = NOW + 7 * DAY_MS
JOINER_NOW = NOW + DAY_MS  # the joiner's (and admin's) clock: a day after the invite


def _key(n: int) -> MemberKey:
    return MemberKey(bytes([n]) * 32, bytes([n + 100]) * 32)


def _invite_body(root: MemberKey, **changes: Any) -> dict[str, Any]:
    body = {
        "format": INVITE_FORMAT, "team": TEAM, "root_public": b64e(root.sign_public),
        "root_box_public": b64e(root.box_public), "location": "/mnt/nas/team",
        "transport": "folder", "created_at": NOW, "expires_at": EXPIRES, "invite_id": INVITE_ID,
    }  # fmt: skip
    return {k: v for k, v in {**body, **changes}.items() if v is not None}


def invite_vectors() -> list[Vector]:
    root, alice = _key(1), _key(2)
    good = seal(_invite_body(root), "invite", root)
    flipped = bytearray(good)
    flipped[good.index(b"/mnt/nas") + 1] ^= 0x01
    v1 = _invite_body(root, format="sealmem/invite/v1", expires_at=None, invite_id=None)
    cases = [
        ("invite-accept", "an invite signed by the team root key, checked before it expires",
         good, JOINER_NOW, "accept"),
        ("invite-for-accept", "a single-use invite for one member name",
         seal(_invite_body(root, **{"for": "carol"}), "invite", root), JOINER_NOW, "accept"),
        ("invite-expired", "an invite checked after its expires_at",
         good, EXPIRES, "invite-expired"),
        ("invite-dated-1970", "an invite made in 1970: long expired",
         seal(_invite_body(root, created_at=0, expires_at=DAY_MS), "invite", root),
         JOINER_NOW, "invite-expired"),
        ("invite-lifetime-too-long", "an invite valid for 30 days and 1 ms",
         seal(_invite_body(root, expires_at=NOW + MAX_INVITE_MS + 1), "invite", root),
         JOINER_NOW, "malformed"),
        ("invite-expires-before-created", "expires_at not after created_at",
         seal(_invite_body(root, expires_at=NOW), "invite", root), JOINER_NOW, "malformed"),
        ("invite-no-id", "an invite without invite_id",
         seal(_invite_body(root, invite_id=None), "invite", root), JOINER_NOW, "malformed"),
        ("invite-future", "an invite dated more than 2 days after the joiner's clock",
         good, NOW - 3 * DAY_MS, "clock-ahead"),
        ("invite-signer-mismatch", "an invite naming the root key, signed by another key",
         seal(_invite_body(root), "invite", alice), JOINER_NOW, "signer-mismatch"),
        ("invite-bad-signature", "the location changed after signing", bytes(flipped),
         JOINER_NOW, "bad-signature"),
        ("invite-wrong-context", "an invite body signed as a join request",
         seal(_invite_body(root), "join", root), JOINER_NOW, "wrong-context"),
        ("invite-unknown-format", "an old v1 invite: no id, no expiry",
         seal(v1, "invite", root), JOINER_NOW, "unknown-format"),
        ("invite-malformed", "an unknown field",
         seal(_invite_body(root, uses=3), "invite", root), JOINER_NOW, "malformed"),
    ]  # fmt: skip
    out = []
    for n, d, data, now, e in cases:
        output = None
        if e == "accept":
            output = {
                "root_fingerprint": root.public().fingerprint(), "invite_id": INVITE_ID,
                "expires_at": EXPIRES, "for": "carol" if n == "invite-for-accept" else None,
            }  # fmt: skip
        out.append(Vector(n, d, {"kind": "invite", "data": b64e(data), "now_ms": now}, e, output))
    return out


def _join_body(k: MemberKey, **changes: Any) -> dict[str, Any]:
    body = {
        "format": JOIN_FORMAT, "team": TEAM, "kid": k.kid, "name": "carol",
        "sign_public": b64e(k.sign_public), "box_public": b64e(k.box_public), "created_at": NOW,
        "invite_id": INVITE_ID,
    }  # fmt: skip
    return {k: v for k, v in {**body, **changes}.items() if v is not None}


def join_vectors() -> list[Vector]:
    carol, mallory = _key(5), _key(4)
    good = seal(_join_body(carol), "join", carol)
    v1 = _join_body(carol, format="sealmem/join/v1", invite_id=None)
    cases = [
        ("join-accept", "a join request naming its invite, self-signed by the key it introduces",
         good, "accept"),
        ("join-no-invite", "a request that names no invite",
         seal(_join_body(carol, invite_id=None), "join", carol), "malformed"),
        ("join-bad-invite-id", "an invite_id that is not 128 bits of base64url",
         seal(_join_body(carol, invite_id="x"), "join", carol), "malformed"),
        ("join-cross-team", "a request for another team",
         seal(_join_body(carol, team="other-team"), "join", carol), "cross-team"),
        ("join-signer-mismatch", "carol's identity, signed by another key",
         seal(_join_body(carol), "join", mallory), "signer-mismatch"),
        ("join-kid-mismatch", "a kid that is not the one of sign_public",
         seal(_join_body(carol, kid=mallory.kid), "join", carol), "signer-mismatch"),
        ("join-bad-signature", "the name changed after signing",
         good.replace(b'"carol"', b'"carl!"'), "bad-signature"),
        ("join-wrong-context", "a join body signed as an invite",
         seal(_join_body(carol), "invite", carol), "wrong-context"),
        ("join-unknown-format", "an old v1 request that names no invite",
         seal(v1, "join", carol), "unknown-format"),
        ("join-name-too-long", "a name of 65 characters",
         seal(_join_body(carol, name="c" * 65), "join", carol), "malformed"),
        ("join-lone-surrogate", "a name holding an escaped lone surrogate",
         good.replace(b'"carol"', b'"car\\ud800"'), "not-canonical"),
    ]  # fmt: skip
    return [
        Vector(n, d, {"kind": "join", "data": b64e(data)}, e,
               {"kid": carol.kid, "fingerprint": carol.public().fingerprint(),
                "invite_id": INVITE_ID} if e == "accept" else None)
        for n, d, data, e in cases
    ]  # fmt: skip


def admission_vectors() -> list[Vector]:
    carol, dave = _key(5), _key(6)
    request = seal(_join_body(carol), "join", carol)
    open_invite = InviteRecord(INVITE_ID, NOW, EXPIRES)
    for_carol = InviteRecord(INVITE_ID, NOW, EXPIRES, "carol")
    cases = [
        ("admission-accept", "a request answering an unexpired invite of the registry",
         [open_invite], JOINER_NOW, "accept"),
        ("admission-open-reused", "an invite for nobody in particular serves several members",
         [InviteRecord(INVITE_ID, NOW, EXPIRES, None, (dave.kid,))], JOINER_NOW, "accept"),
        ("admission-for-accept", "a single-use invite, used by no one yet, for this name",
         [for_carol], JOINER_NOW, "accept"),
        ("admission-unknown", "a request naming an invite the admin never issued",
         [InviteRecord(OTHER_ID, NOW, EXPIRES)], JOINER_NOW, "invite-unknown"),
        ("admission-expired", "a request checked after its invite's expires_at",
         [open_invite], EXPIRES, "invite-expired"),
        ("admission-used", "a single-use invite already used by another key",
         [InviteRecord(INVITE_ID, NOW, EXPIRES, "carol", (dave.kid,))], JOINER_NOW,
         "invite-used"),
        ("admission-name-mismatch", "a single-use invite for another name",
         [InviteRecord(INVITE_ID, NOW, EXPIRES, "dave")], JOINER_NOW, "invite-name-mismatch"),
    ]  # fmt: skip
    return [
        Vector(n, d, {"kind": "admission", "data": b64e(request),
                      "registry": [r.to_json() for r in registry], "now_ms": now}, e)
        for n, d, registry, now, e in cases
    ]  # fmt: skip


def invite_family() -> list[Vector]:
    return [*invite_vectors(), *join_vectors(), *admission_vectors()]
