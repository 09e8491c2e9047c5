# ruff: noqa: E501  (one case per line: the tables read as the SPEC lists them)
"""Vectors for devices (SPEC.md "Devices and identity"): roster v2, admin objects signed
by any admin device, manifests of a second device, device invites, device join
requests and their admission.

Roster, keyring and manifest cases replay a setup chain and accept the object;
``device-invite`` cases are checked as the new machine does at ``now_ms``;
``device-join`` as the hub does (shape, self-signature, embedded invite);
``device-admission`` cases check a valid device join against the roster chain in
``rosters`` at ``now_ms``, as an admin does before approving.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sealmem.crypto import SUITE, ContentKey, MemberKey
from sealmem.protocol import admin as edits
from sealmem.protocol.checkpoint import Checkpoint
from sealmem.protocol.device_invite import (
    DEVICE_INVITE_FORMAT,
    DeviceInvite,
    seal_device_join,
)
from sealmem.protocol.devices import Introduced
from sealmem.protocol.encoding import b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.hlc import MAX_AHEAD_MS
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.roster import Member, Revocation, Roster
from sealmem.protocol.snapshot import build_snapshot

from .basics import NOW, PROJECT, TEAM

__all__ = ["device_docs"]

INVITE_ID = b64e(bytes(range(40, 56)))
SETUP_INVITE_ID = b64e(bytes(range(60, 76)))  # the invite the setup's devices answered
HOUR = 3_600_000
DAY = 86_400_000


def _key(n: int) -> MemberKey:
    return MemberKey(bytes([n]) * 32, bytes([n + 100]) * 32)


ROOT, ALICE, BOB = _key(1), _key(2), _key(3)
ROOT_LAPTOP, ALICE_LAPTOP, NEW_DEVICE, OTHER = _key(11), _key(12), _key(13), _key(14)
KEY1 = ContentKey(b"\x11" * 32)


def _member(k: MemberKey, name: str, role: str = "member") -> Member:
    return Member(k.kid, name, k.sign_public, k.box_public, role)


def _v1() -> Roster:
    root = replace(_member(ROOT, "root"), role="admin")
    r = edits.genesis(SUITE, TEAM, root, created_at=NOW, projects=[PROJECT])
    add = [
        edits.adding_member(_member(k, n), projects=[PROJECT])
        for k, n in ((ALICE, "alice"), (BOB, "bob"))
    ]
    return edits.next_roster(SUITE, r, *add, created_at=NOW + 1)


def _device(
    member: MemberKey, k: MemberKey, name: str, signer: MemberKey, intro: bool = True
) -> edits.Edit:
    return edits.adding_device(
        member.kid, kid=k.kid, name=name, sign_public=k.sign_public, box_public=k.box_public,
        approved_by=signer.kid,
        introduced_by=Introduced(member.kid, SETUP_INVITE_ID) if intro else None,
    )  # fmt: skip


V1 = edits.genesis(
    SUITE, TEAM, replace(_member(ROOT, "root"), role="admin"), created_at=NOW, projects=[PROJECT]
)
V2 = _v1()  # root, alice, bob in v1 format at version 2
UP = edits.next_roster(
    SUITE,
    V2,
    edits.upgrading(ROOT.kid, {}),
    _device(ROOT, ROOT_LAPTOP, "laptop", ROOT),
    created_at=NOW + 2,
)
V4 = edits.next_roster(
    SUITE, UP, _device(ALICE, ALICE_LAPTOP, "laptop", ROOT_LAPTOP, intro=False), created_at=NOW + 3
)
SETUP_V1 = [V1.sign(ROOT), V2.sign(ROOT)]
SETUP_UP = [*SETUP_V1, UP.sign(ROOT)]
SETUP_V4 = [*SETUP_UP, V4.sign(ROOT_LAPTOP)]


def _doc(
    description: str,
    setup: list[tuple[str, bytes]],
    obj: dict[str, Any],
    expected: str,
    output: dict[str, Any] | None = None,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "description": description,
        "inputs": {
            "team": TEAM, "root_public": b64e(ROOT.sign_public),
            "setup": [{"kind": k, "data": b64e(d)} for k, d in setup], "object": obj,
        },
        "expected": "accept" if expected == "accept" else {"reject": expected},
    }  # fmt: skip
    if output is not None:
        doc["output"] = output
    return doc


def _unchecked(old: Roster, **changes: Any) -> Roster:
    """A successor with ``changes``, not checked (to build refused rosters)."""
    return old.successor(SUITE, created_at=NOW + old.version, **changes)


def _rosters() -> dict[str, dict[str, Any]]:
    rs = [("roster", d) for d in SETUP_V1]
    up_setup = [("roster", d) for d in SETUP_UP]
    v4_setup = [("roster", d) for d in SETUP_V4]
    root_p = UP.person(ROOT.kid)
    alice_p = UP.person(ALICE.kid)
    assert root_p is not None
    assert alice_p is not None
    laptop = root_p.devices[1]
    first = root_p.devices[0]

    def people(*swap: Any) -> tuple[Any, ...]:
        out = list(UP.people)
        for p in swap:
            out = [p if q.devices[0].kid == p.devices[0].kid else q for q in out]
        return tuple(out)

    twice = replace(
        alice_p,
        devices=(*alice_p.devices, replace(laptop, added_at=UP.version + 1, approved_by=ROOT.kid)),
    )
    look = _unchecked(
        UP, people=people(replace(root_p, devices=(first, replace(laptop, name="device 1"))))
    )
    not_first = _unchecked(UP, people=people(replace(root_p, id=ROOT_LAPTOP.kid)))
    removed_grant = _unchecked(
        UP, people=people(replace(alice_p, removed_at=UP.version + 1)),
        revocations=(*UP.revocations, Revocation(ALICE.kid, UP.version + 1)),
    )  # fmt: skip
    drop = _unchecked(UP, people=people(replace(root_p, devices=(first,))))
    rewrite = _unchecked(
        UP,
        people=people(
            replace(root_p, devices=(first, replace(laptop, box_public=OTHER.box_public)))
        ),
    )
    bad_approver = edits.next_roster(
        SUITE, UP, _device(BOB, OTHER, "phone", ROOT), created_at=NOW + 9
    )
    changed_key = _unchecked(V2, people=UP.people)
    changed_key = replace(changed_key, people=tuple(
        replace(p, name="alicia") if p.id == ALICE.kid else p for p in changed_key.people))  # fmt: skip
    back_to_v1 = _unchecked(UP, people=())
    back_to_v1 = replace(back_to_v1, members=V2.members)
    revoke_laptop = edits.next_roster(
        SUITE, UP, edits.revoking_device(ROOT_LAPTOP.kid), created_at=NOW + 3
    )
    grant_bob = edits.next_roster(
        SUITE,
        revoke_laptop,
        edits.setting_grant(BOB.kid, PROJECT, read=True, write=False),
        created_at=NOW + 4,
    )
    by_alice = edits.next_roster(
        SUITE, UP, edits.setting_grant(BOB.kid, PROJECT, read=True, write=False), created_at=NOW + 3
    )
    after_root_revoked = edits.next_roster(
        SUITE, UP, edits.revoking_device(ROOT.kid), created_at=NOW + 3
    )
    next_after = edits.next_roster(
        SUITE,
        after_root_revoked,
        edits.setting_grant(BOB.kid, PROJECT, read=True, write=False),
        created_at=NOW + 4,
    )
    cases = {
        "roster-v2-upgrade-from-v1": ("a v2 roster after v1: every member one device, the root admin's second device added", rs, UP.sign(ROOT), "accept"),
        "roster-v2-devices": ("a second device for alice, approved by the root admin's second device", up_setup, V4.sign(ROOT_LAPTOP), "accept"),
        "roster-v2-signed-by-second-admin-device": ("a roster signed by the admin's second device", up_setup, by_alice.sign(ROOT_LAPTOP), "accept"),
        "roster-v2-after-root-device-revoked": ("the root key's device revoked by the admin's other device, then a roster it signs", [*up_setup, ("roster", after_root_revoked.sign(ROOT_LAPTOP))], next_after.sign(ROOT_LAPTOP), "accept"),
        "roster-v2-signed-by-revoked-admin-device": ("a roster signed by an admin device revoked in the version before", [*up_setup, ("roster", revoke_laptop.sign(ROOT))], grant_bob.sign(ROOT_LAPTOP), "not-admin"),
        "roster-v2-signed-by-member-device": ("a roster signed by a device of a member who is not an admin", up_setup, by_alice.sign(ALICE), "not-admin"),
        "roster-v2-member-id-not-first-device": ("a member id that is not the kid of its first device", up_setup, not_first.sign(ROOT), "malformed"),
        "roster-v2-device-kid-twice": ("one device kid listed under two members", up_setup, _unchecked(UP, people=people(twice)).sign(ROOT), "malformed"),
        "roster-v2-device-name-lookalike": ("two devices of one member named alike", up_setup, look.sign(ROOT), "malformed"),
        "roster-v2-removed-member-with-grant": ("a removed member that still holds a grant", up_setup, removed_grant.sign(ROOT), "malformed"),
        "roster-v2-device-removed": ("a listed device dropped from its member", up_setup, drop.sign(ROOT), "roster-not-extending"),
        "roster-v2-device-rewritten": ("a listed device given another box key", up_setup, rewrite.sign(ROOT), "roster-not-extending"),
        "roster-v2-approved-by-not-signer": ("a new device whose approved_by is not the roster's signer", up_setup, bad_approver.sign(ROOT_LAPTOP), "malformed"),
        "roster-v2-upgrade-changes-key": ("an upgrade from v1 that renames a member", rs, changed_key.sign(ROOT), "roster-not-extending"),
        "roster-v1-after-v2": ("a v1 roster after a v2 one", up_setup, back_to_v1.sign(ROOT), "roster-not-extending"),
    }  # fmt: skip
    del v4_setup
    return {
        n: _doc(d, setup, {"kind": "roster", "data": b64e(data)}, e)
        for n, (d, setup, data, e) in cases.items()
    }


def _objects() -> dict[str, dict[str, Any]]:
    setup = [("roster", d) for d in SETUP_V4]
    ring = build_keyring(KEY1, V4, PROJECT)
    k_setup = [*setup, ("keyring", ring.sign(ROOT_LAPTOP))]
    snap = build_snapshot(
        SUITE, KEY1, ALICE_LAPTOP, records=[], team=TEAM, project=PROJECT, epoch=1,
        roster_version=V4.version, seq=1, prev=None, random=lambda n: b"\x07" * n,
        created_at=NOW + 10,
    )  # fmt: skip
    wraps_revoked = edits.next_roster(
        SUITE, V4, edits.revoking_device(ALICE_LAPTOP.kid), created_at=NOW + 5
    )
    stale = build_keyring(KEY1, V4, PROJECT)  # wraps the revoked laptop too
    cp = Checkpoint(
        team=TEAM, seq=2, roster_version=V4.version, roster_hash=V4.hash(SUITE),
        projects={PROJECT: (1, KEY1.commitment())}, signed_at=NOW + 10,
    )  # fmt: skip
    at = {"now_ms": NOW + 60_000}
    return {
        "checkpoint-signed-by-admin-device": _doc("a checkpoint signed by the admin's second device", k_setup, {"kind": "checkpoint", "data": b64e(cp.sign(ROOT_LAPTOP)), **at}, "accept"),
        "checkpoint-signed-by-member-device": _doc("a checkpoint signed by the second device of a member who is no admin", k_setup, {"kind": "checkpoint", "data": b64e(cp.sign(ALICE_LAPTOP)), **at}, "not-admin"),
        "keyring-wrap-per-device": _doc("a keyring wrapped to every unrevoked device of each reader, signed by an admin's second device", setup, {"kind": "keyring", "data": b64e(ring.sign(ROOT_LAPTOP))}, "accept"),
        "keyring-wrap-to-revoked-device": _doc("a keyring citing a roster that revoked a device, wrapped to that device", [*setup, ("roster", wraps_revoked.sign(ROOT))], {"kind": "keyring", "data": b64e(replace(stale, roster_version=wraps_revoked.version, epoch=2).sign(ROOT))}, "no-read-grant"),
        "manifest-device-slot": _doc("a manifest of alice's second device in its own slot, under alice's grant", k_setup, {"kind": "manifest", "data": b64e(snap.envelope)}, "accept"),
    }  # fmt: skip


def _invite(**changes: Any) -> DeviceInvite:
    base = DeviceInvite(
        team=TEAM, member=ALICE.kid, name="desktop", signer_public=ALICE.sign_public,
        root_public=ROOT.sign_public, root_box_public=ROOT.box_public, location="/mnt/team",
        transport="folder", roster_version=V4.version, roster_hash=V4.hash(SUITE),
        created_at=NOW, expires_at=NOW + DAY, invite_id=INVITE_ID,
    )  # fmt: skip
    return replace(base, **changes)


def _join(
    invite: DeviceInvite, invite_data: bytes, key: MemberKey = NEW_DEVICE, team: str = TEAM
) -> bytes:
    return seal_device_join(
        team=team, key=key, sign_public=key.sign_public, box_public=key.box_public,
        created_at=NOW + HOUR, invite_data=invite_data, invite=invite,
    )  # fmt: skip


def _enrolment() -> dict[str, dict[str, Any]]:
    good = _invite()
    good_data = seal(good.to_body(), "device-invite", ALICE)
    long = seal(_invite(expires_at=NOW + DAY + 1).to_body(), "device-invite", ALICE)
    other_signer = seal(good.to_body(), "device-invite", BOB)
    as_join = seal(good.to_body(), "device-join", ALICE)
    of_bob = _invite(member=BOB.kid)
    bob_data = seal(of_bob.to_body(), "device-invite", ALICE)
    by_laptop = _invite(signer_public=ALICE_LAPTOP.sign_public)
    laptop_data = seal(by_laptop.to_body(), "device-invite", ALICE_LAPTOP)
    revoked = edits.next_roster(
        SUITE, V4, edits.revoking_device(ALICE_LAPTOP.kid), created_at=NOW + 5
    )
    used_by = edits.next_roster(SUITE, V4, edits.adding_device(
        ALICE.kid, kid=OTHER.kid, name="phone", sign_public=OTHER.sign_public,
        box_public=OTHER.box_public, approved_by=ROOT.kid,
        introduced_by=Introduced(ALICE.kid, INVITE_ID),
    ), created_at=NOW + 5)  # fmt: skip
    renamed = dict(_invite().to_body())
    fmt = renamed["format"]
    assert fmt == DEVICE_INVITE_FORMAT
    later = NOW + HOUR
    chain = [b64e(d) for d in SETUP_V4]
    ahead = _invite(created_at=later + MAX_AHEAD_MS + 1, expires_at=later + MAX_AHEAD_MS + DAY)
    ahead_data = seal(ahead.to_body(), "device-invite", ALICE)
    skewed = _invite(created_at=later + MAX_AHEAD_MS, expires_at=later + MAX_AHEAD_MS + DAY)
    skewed_data = seal(skewed.to_body(), "device-invite", ALICE)

    def inv(d: str, data: bytes, now: int, e: str) -> tuple[str, dict[str, Any], str]:
        return d, {"kind": "device-invite", "data": b64e(data), "now_ms": now}, e

    def join(d: str, data: bytes, e: str) -> tuple[str, dict[str, Any], str]:
        return d, {"kind": "device-join", "data": b64e(data)}, e

    def adm(
        d: str, data: bytes, rosters: list[str], now: int, e: str
    ) -> tuple[str, dict[str, Any], str]:
        return (
            d,
            {
                "kind": "device-admission",
                "data": b64e(data),
                "rosters": rosters,
                "now_ms": now,
                "root_public": b64e(ROOT.sign_public),
            },
            e,
        )

    cases = {
        "device-invite": inv("a device invite signed by the member's existing device", good_data, later, "accept"),
        "device-invite-expired": inv("a device invite checked at its expires_at", good_data, NOW + DAY, "invite-expired"),
        "device-invite-lifetime-too-long": inv("a device invite valid one day and 1 ms", long, later, "malformed"),
        "device-invite-signer-mismatch": inv("a device invite naming alice's key, signed by bob", other_signer, later, "signer-mismatch"),
        "device-invite-wrong-context": inv("a device invite signed as a device join", as_join, later, "wrong-context"),
        "device-join": join("a device join request carrying its invite, self-signed", _join(good, good_data), "accept"),
        "device-join-cross-team": join("a device join request for another team", _join(good, good_data, team="other-team"), "cross-team"),
        "device-join-signer-mismatch": join("a device join request signed by another key than the one it introduces", seal_device_join(team=TEAM, key=OTHER, sign_public=NEW_DEVICE.sign_public, box_public=NEW_DEVICE.box_public, created_at=later, invite_data=good_data, invite=good), "signer-mismatch"),
        "device-admission": adm("a device join answering an unexpired invite of one of alice's devices", _join(good, good_data), chain, later, "accept"),
        "device-admission-by-second-device": adm("an invite signed by alice's second device", _join(by_laptop, laptop_data), chain, later, "accept"),
        "device-join-invite-of-other-member": adm("an invite signed by alice's device for a device of bob", _join(of_bob, bob_data), chain, later, "signer-mismatch"),
        "device-join-invite-signed-by-revoked-device": adm("an invite signed by a device revoked since", _join(by_laptop, laptop_data), [*chain, b64e(revoked.sign(ROOT))], later, "revoked"),
        "device-admission-invite-used": adm("an invite the roster already lists in a device's introduced_by", _join(good, good_data), [*chain, b64e(used_by.sign(ROOT))], later, "invite-used"),
        "device-admission-invite-from-the-future": adm("a device join whose invite is dated more than MAX_AHEAD_MS after the admin's clock (a valid lifetime)", _join(ahead, ahead_data), chain, later, "clock-ahead"),
        "device-admission-invite-ahead-within-skew": adm("a device join whose invite is dated exactly MAX_AHEAD_MS after the admin's clock", _join(skewed, skewed_data), chain, later, "accept"),
        "device-admission-expired": adm("a device join approved after its invite expired", _join(good, good_data), chain, NOW + DAY, "invite-expired"),
    }  # fmt: skip
    out = {}
    for n, (d, obj, e) in cases.items():
        output = None
        if e == "accept" and obj["kind"] == "device-invite":
            output = {"member": ALICE.kid, "name": "desktop", "invite_id": INVITE_ID}
        elif e == "accept":
            output = {"kid": NEW_DEVICE.kid, "member": ALICE.kid, "name": "desktop"}
        out[n] = _doc(d, [], obj, e, output)
    return out


def device_docs() -> dict[str, dict[str, Any]]:
    return {**_rosters(), **_objects(), **_enrolment()}
