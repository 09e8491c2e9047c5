# ruff: noqa: E501  (one case per line: the tables read as the SPEC lists them)
"""Vectors for a member's private space (SPEC.md "Private memories and trust follow the
member"): member keyrings (kind ``member-keyring``, accepted after a setup chain that may
hold member keyrings too) and private snapshots (kind ``private-snapshot``: ``data`` a
private manifest filed under ``member``, opened with ``content_key`` as a snapshot is).
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from typing import Any

from sealmem.crypto import SUITE, ContentKey
from sealmem.protocol import admin as edits
from sealmem.protocol import canonical
from sealmem.protocol.encoding import b64d, b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.keyring import build_keyring
from sealmem.protocol.manifest import ChunkRef, Manifest
from sealmem.protocol.private import build_member_keyring
from sealmem.protocol.private_trust import TrustEntry, seal_trust
from sealmem.protocol.record import Record
from sealmem.protocol.snapshot import bucket_of, build_snapshot, chunk_ad, chunk_id

from .basics import NOW, PROJECT, TEAM
from .devices import (
    ALICE,
    ALICE_LAPTOP,
    BOB,
    KEY1,
    OTHER,
    ROOT,
    ROOT_LAPTOP,
    SETUP_V4,
    V4,
    _device,
    _doc,
)
from .generate import record

__all__ = ["private_docs"]

SEEDS = {b"\x11" * 32: KEY1, b"\x22" * 32: ContentKey(b"\x22" * 32)}
MKEY = SEEDS[b"\x22" * 32]  # alice's member key, epoch 1
MKEY2 = ContentKey(b"\x23" * 32)
V5 = edits.next_roster(SUITE, V4, _device(ALICE, OTHER, "phone", ROOT_LAPTOP), created_at=NOW + 4)
REVOKED = edits.next_roster(SUITE, V4, edits.revoking_device(ALICE_LAPTOP.kid), created_at=NOW + 4)


def _private(i: int) -> Record:
    return replace(record(ALICE_LAPTOP, i), visibility="private")


def _snap(records: list[Record], key: ContentKey, *, private: bool) -> Any:
    return build_snapshot(
        SUITE, key, ALICE_LAPTOP, records=records, team=TEAM, project=PROJECT, epoch=1,
        roster_version=V4.version, seq=1, prev=None, random=lambda n: b"\x09" * n,
        created_at=NOW + 10, private=private,
    )  # fmt: skip


def _hand_made(records: list[Record]) -> tuple[bytes, dict[str, bytes]]:
    """A private manifest over one chunk holding ``records`` as they are (any visibility)."""
    bucket = bucket_of(SUITE, records[0].id, 64)
    plain = canonical.encode([r.to_wire() for r in records])
    ad = chunk_ad(TEAM, PROJECT, ALICE_LAPTOP.kid, 1, bucket, private=True)
    chunk = MKEY.encrypt(SUITE.pad(zlib.compress(plain, 3)), ad, nonce=b"\x0a" * 24)
    ref = ChunkRef(bucket, chunk_id(SUITE, chunk), len(chunk))
    m = Manifest(
        TEAM,
        PROJECT,
        ALICE_LAPTOP.kid,
        1,
        None,
        1,
        V4.version,
        64,
        (ref,),
        len(records),
        (),
        NOW + 10,
        private=True,
    )
    return m.sign(ALICE_LAPTOP), {ref.id: chunk}


def _keyrings() -> dict[str, dict[str, Any]]:
    rosters = [("roster", d) for d in SETUP_V4]
    ring = build_member_keyring(MKEY, V4, ALICE.kid, 1)
    to_bob = replace(ring, wraps={**ring.wraps, BOB.kid: MKEY.wrap_to(BOB.box_public)})
    wider = build_member_keyring(MKEY, V5, ALICE.kid, 1)
    v5 = [*rosters, ("roster", V5.sign(ROOT_LAPTOP))]
    revoked = [*rosters, ("roster", REVOKED.sign(ROOT))]

    def case(
        d: str, setup: list[tuple[str, bytes]], data: bytes, e: str
    ) -> tuple[str, list[tuple[str, bytes]], bytes, str]:
        return d, setup, data, e

    cases = {
        "member-keyring": case("alice's member key wrapped to her two devices, signed by her second device", rosters, ring.sign(ALICE_LAPTOP), "accept"),
        "member-keyring-update": case("the same key wrapped to alice's third device, citing the newer roster", [*v5, ("member-keyring", ring.sign(ALICE))], wider.sign(ALICE), "accept"),
        "member-keyring-signed-by-admin": case("alice's member keyring signed by the team's admin", rosters, ring.sign(ROOT_LAPTOP), "signer-mismatch"),
        "member-keyring-wrap-to-other-member": case("alice's member keyring also wrapped to bob", rosters, to_bob.sign(ALICE), "no-read-grant"),
        "member-keyring-wrap-to-revoked-device": case("a member keyring citing the roster that revoked a device, wrapped to it", revoked, replace(ring, roster_version=REVOKED.version, epoch=2).sign(ALICE), "no-read-grant"),
        "member-keyring-signed-by-revoked-device": case("a member keyring signed by alice's device revoked since", revoked, ring.sign(ALICE_LAPTOP), "revoked"),
        "member-keyring-fork": case("a second member keyring of epoch 1 with another key", [*v5, ("member-keyring", ring.sign(ALICE))], build_member_keyring(MKEY2, V5, ALICE.kid, 1).sign(ALICE), "fork"),
        "member-keyring-rollback": case("epoch 1 citing v4 after epoch 1 citing v5 was trusted", [*v5, ("member-keyring", wider.sign(ALICE))], ring.sign(ALICE), "rollback"),
    }  # fmt: skip
    return {
        n: _doc(d, setup, {"kind": "member-keyring", "data": b64e(data)}, e)
        for n, (d, setup, data, e) in cases.items()
    }


def _snapshots() -> dict[str, dict[str, Any]]:
    team_ring = build_keyring(KEY1, V4, PROJECT)
    setup = [("roster", d) for d in SETUP_V4]
    setup += [("keyring", team_ring.sign(ROOT_LAPTOP))]
    setup += [("member-keyring", build_member_keyring(MKEY, V4, ALICE.kid, 1).sign(ALICE))]
    good = _snap([_private(i) for i in range(3)], MKEY, private=True)
    # the member key equal to the team key: only the chunk's kind tells them apart
    same = _snap([_private(i) for i in range(2)], KEY1, private=True)
    team = _snap([record(ALICE_LAPTOP, i) for i in range(2)], KEY1, private=False)
    as_team = replace(same.manifest, private=False).sign(ALICE_LAPTOP)
    as_private = replace(team.manifest, private=True).sign(ALICE_LAPTOP)
    mixed, mixed_chunks = _hand_made([record(ALICE_LAPTOP, 5)])
    epoch2 = replace(good.manifest, epoch=2).sign(ALICE_LAPTOP)

    def obj(kind: str, data: bytes, chunks: dict[str, bytes], key: ContentKey) -> dict[str, Any]:
        out = {
            "kind": kind,
            "data": b64e(data),
            "content_key": b64e(next(b for b, k in SEEDS.items() if k is key)),
            "chunks": {c: b64e(b) for c, b in chunks.items()},
        }
        if kind == "private-snapshot":
            out["member"] = ALICE.kid
        return out

    cases: dict[str, tuple[str, dict[str, Any], str, int | None]] = {
        "private-snapshot": ("three private records of alice's second device, under her member key", obj("private-snapshot", good.envelope, good.new_chunks, MKEY), "accept", 3),
        "private-chunk-as-team-chunk": ("private chunks listed by a team manifest (the keys equal)", obj("snapshot", as_team, same.new_chunks, KEY1), "tampered", None),
        "team-chunk-as-private-chunk": ("team chunks listed by a private manifest (the keys equal)", obj("private-snapshot", as_private, team.new_chunks, KEY1), "tampered", None),
        "private-chunk-with-team-record": ("a private chunk holding a team record", obj("private-snapshot", mixed, mixed_chunks, MKEY), "malformed", None),
        "private-manifest-in-team-slot": ("a private manifest served as a team manifest", obj("manifest", good.envelope, {}, MKEY), "malformed", None),
        "team-manifest-in-private-slot": ("a team manifest served in alice's private slot", obj("private-snapshot", team.envelope, team.new_chunks, KEY1), "malformed", None),
        "private-manifest-epoch-unknown": ("a private manifest of a member epoch with no trusted member keyring", obj("private-snapshot", epoch2, {}, MKEY), "epoch-unknown", None),
        "private-manifest-of-other-member": ("alice's device's private manifest filed under bob", {**obj("private-snapshot", good.envelope, good.new_chunks, MKEY), "member": BOB.kid}, "signer-mismatch", None),
    }  # fmt: skip
    out = {}
    for n, (d, o, e, records) in cases.items():
        if o["kind"] == "manifest":
            o = {"kind": "manifest", "data": o["data"]}
        doc = _doc(d, setup, o, e)
        if records is not None:
            doc["records"] = records
        out[n] = doc
    return out


def _trust() -> dict[str, dict[str, Any]]:
    setup = [("roster", d) for d in SETUP_V4]
    ring = [("member-keyring", build_member_keyring(MKEY, V4, ALICE.kid, 1).sign(ALICE))]
    revoked = [*setup, ("roster", REVOKED.sign(ROOT)), *ring]
    setup += ring
    entries = [TrustEntry(BOB.kid, "muted", NOW + 5), TrustEntry(ROOT.kid, "trusted", NOW + 6, 1)]

    def sealed(signer: Any = ALICE_LAPTOP, **kw: Any) -> bytes:
        args = {"team": TEAM, "member": ALICE.kid, "epoch": 1, "seq": 2, "entries": entries}
        args.update(kw)
        return seal_trust(MKEY, signer, random=lambda n: b"\x0b" * n, **args)

    good = sealed()
    body = canonical.decode(good)["body"]
    flipped = bytearray(b64d(body["sealed"]))
    flipped[-1] ^= 1
    tampered = seal({**body, "sealed": b64e(bytes(flipped))}, "private-trust", ALICE_LAPTOP)

    def obj(data: bytes, writer: Any = ALICE_LAPTOP, **kw: Any) -> dict[str, Any]:
        return {
            "kind": "private-trust",
            "data": b64e(data),
            "member": ALICE.kid,
            "writer": writer.kid,
            "content_key": b64e(b"\x22" * 32),
            **kw,
        }

    cases = {
        "private-trust": ("alice's laptop's trust decisions about two teammates, under her member key", setup, obj(good), "accept"),
        "private-trust-signed-by-other-member": ("trust decisions filed in alice's space, signed by bob", setup, obj(sealed(BOB), BOB), "signer-mismatch"),
        "private-trust-signed-by-revoked-device": ("trust decisions of alice's device revoked since", revoked, obj(good), "revoked"),
        "private-trust-epoch-unknown": ("trust decisions under a member epoch with no trusted keyring", setup, obj(sealed(epoch=2)), "epoch-unknown"),
        "private-trust-rollback": ("seq 2 after seq 3 of the same device was read", setup, obj(good, held_seq=3), "rollback"),
        "private-trust-tampered": ("the sealed decisions changed, then signed again", setup, obj(tampered), "tampered"),
    }  # fmt: skip
    out = {}
    for n, (d, st, o, e) in cases.items():
        out[n] = _doc(d, st, o, e, {"entries": 2} if e == "accept" else None)
    return out


def private_docs() -> dict[str, dict[str, Any]]:
    return {**_keyrings(), **_snapshots(), **_trust()}
