"""Vectors for rules the other vectors left uncaught (SPEC.md names them beside each MUST).

Chain cases (:func:`silence_cases`): list lengths checked before their entries, append-only
revocations, the root-listing row of v1, a keyring signer revoked in the roster it cites,
a reader with no wrap and a wrap that does not open, the equivocation rows, a pin's hash,
the delta checks and their order, the running record count, a chunk checked record by
record.  The building blocks are in :mod:`.fields`.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sealmem.crypto import SUITE
from sealmem.protocol import canonical
from sealmem.protocol.encoding import b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.manifest import MAX_HEADS, ChunkRef, Manifest
from sealmem.protocol.roster import MAX_MEMBERS, Pin, Revocation, Roster
from sealmem.protocol.snapshot import PreviousSnapshot, Snapshot, bucket_of, chunk_ad, chunk_id

if TYPE_CHECKING:
    from .generate import Case

__all__ = ["DESCRIPTIONS", "silence_cases"]

MAX_LIST = 65_536

DESCRIPTIONS = {
    "roster-too-many-members": "4097 members (the limit is 4096): too-large before any entry",
    "roster-list-too-long": "65 537 grants (the limit is 65 536): too-large before any entry",
    "roster-revocation-not-member": "a revocation of a kid that is not a member",
    "roster-revocation-removed": "v3 drops the revocation v2 made: revocations are append-only",
    "roster-revocation-rewritten": "v3 rewrites the at_version of v2's revocation",
    "roster-v1-root-not-admin": "v1 signed by the pinned root, which it lists as a plain member",
    "roster-reset-unknown-project": "a reset for a project the roster does not register",
    "roster-name-bidi": "a member name holding a right-to-left override (U+202E)",
    "snapshot-zlib-level-9": "a chunk compressed at zlib level 9: any level is read",
    "keyring-too-many-wraps": "4097 wraps (the limit is 4096): too-large before any entry",
    "keyring-signer-revoked-in-cited-roster": (
        "signed by alice, an admin, citing the roster that revokes her"
    ),
    "keyring-reader-no-wrap": "a valid keyring without bob's wrap: accepted, bob holds no key",
    "keyring-unwrap-fails": "alice's wrap is 80 bytes that are no sealed box for her",
    "manifest-equivocation-witnessed": (
        "alice's seq 1, while bob witnessed another alice seq 1 (no head for alice yet)"
    ),
    "manifest-equivocation-two-witnesses": (
        "root witnesses alice's seq 1, which bob witnessed with another hash"
    ),
    "manifest-revoked-pin-other-hash": "a revoked writer's manifest at the pinned seq, other hash",
    "manifest-too-many-heads": "16 385 heads (the limit is 16 384): too-large before any entry",
    "manifest-delta-base-seq-not-below": "a delta whose base.seq equals its own seq",
    "manifest-delta-changed-and-removed": "a delta that changes and removes the same bucket",
    "snapshot-delta-base-malformed": (
        "the only base offered does not parse as a manifest: no base (missing-base)"
    ),
    "snapshot-delta-base-seq-other": "a delta whose base.seq is not the seq of the base it hashes",
    "snapshot-delta-removed-unlisted": "a delta that removes a bucket its base does not list",
    "snapshot-delta-records-below-chunks": "a delta whose records is below its rebuilt chunks",
    "snapshot-running-count-hole": (
        "the first chunk holds 3 records, the manifest says 2, the second chunk is missing: "
        "the running count refuses it, the hole does not hide it"
    ),
    "snapshot-running-count-stops": (
        "the first chunk holds 3 records, the manifest says 2: refused there, before the "
        "second chunk (not canonical) is opened"
    ),
    "snapshot-record-by-record": (
        "a chunk whose first record is bob's and whose second is of another kind of wrong: "
        "each record is checked whole before the next, so the first one's reason"
    ),
}


def _hand_roster(base: Roster, signer: Any, **changes: Any) -> bytes:
    """``base``'s body with ``changes``, signed as is (no :meth:`Roster.check`)."""
    return seal({**base.to_body(), **changes}, "roster", signer)


def roster_silences() -> list[Case]:
    from .generate import ALICE, BOB, CAROL, R1, R1_ROSTER, ROOT, Case, member, nxt

    only_r1 = [("roster", R1)]
    r2 = nxt(R1_ROSTER, revocations=(Revocation(BOB.kid, 2),))
    r3 = nxt(r2)
    v3 = r3.to_body()
    v3_rewritten = {**v3, "revocations": [{**v3["revocations"][0], "at_version": 1}]}
    plain_root = (member(ROOT, "root"), *R1_ROSTER.members[1:])
    return [
        Case("roster-too-many-members", [],
             _hand_roster(R1_ROSTER, ROOT, members=[0] * (MAX_MEMBERS + 1)), "too-large"),
        Case("roster-list-too-long", [],
             _hand_roster(R1_ROSTER, ROOT, grants=[0] * (MAX_LIST + 1)), "too-large"),
        Case("roster-revocation-not-member", [],
             _hand_roster(R1_ROSTER, ROOT, revocations=[
                 {"kid": CAROL.kid, "at_version": 1, "pins": {}}]), "malformed"),
        Case("roster-revocation-removed", [*only_r1, ("roster", r2.sign(ROOT))],
             seal({**v3, "revocations": []}, "roster", ROOT), "roster-not-extending"),
        Case("roster-revocation-rewritten", [*only_r1, ("roster", r2.sign(ROOT))],
             seal(v3_rewritten, "roster", ROOT), "roster-not-extending"),
        Case("roster-v1-root-not-admin", [],
             _hand_roster(R1_ROSTER, ROOT, admins=[ALICE.kid],
                          members=[m.to_wire() for m in (
                              plain_root[0], member(ALICE, "alice", "admin"), plain_root[2])]),
             "not-admin"),
        Case("roster-name-bidi", [],
             _hand_roster(R1_ROSTER, ROOT, members=[
                 {**m.to_wire(), "name": "bob\u202eevil"} if m.kid == BOB.kid else m.to_wire()
                 for m in R1_ROSTER.members]), "malformed"),
        Case("roster-reset-unknown-project", [],
             _hand_roster(R1_ROSTER, ROOT, resets=[
                 {"kid": ALICE.kid, "project": "docs", "at_version": 1}]), "malformed"),
    ]  # fmt: skip


def keyring_silences() -> list[Case]:
    from sealmem.protocol.keyring import build_keyring

    from .generate import (
        ALICE,
        ALICE_ADMIN,
        BOB,
        KEY1,
        PROJECT,
        R1,
        R1_ROSTER,
        ROOT,
        Case,
        nxt,
        reader,
    )  # fmt: skip

    kr = build_keyring(KEY1, R1_ROSTER, PROJECT)
    many = {**kr.to_body(), "wraps": {str(i): "" for i in range(MAX_MEMBERS + 1)}}
    revoked = nxt(ALICE_ADMIN, revocations=(Revocation(ALICE.kid, 3),))
    revoked_setup = [("roster", R1), ("roster", ALICE_ADMIN.sign(ROOT)),
                     ("roster", revoked.sign(ROOT))]  # fmt: skip
    no_bob = replace(kr, wraps={k: w for k, w in kr.wraps.items() if k != BOB.kid})
    garbage = replace(kr, wraps={**kr.wraps, ALICE.kid: bytes(range(80))})
    return [
        Case("keyring-too-many-wraps", [("roster", R1)], seal(many, "keyring", ROOT),
             "too-large"),
        Case("keyring-signer-revoked-in-cited-roster", revoked_setup,
             build_keyring(KEY1, revoked, PROJECT).sign(ALICE), "not-admin"),
        Case("keyring-reader-no-wrap", [("roster", R1)], no_bob.sign(ROOT), "accept",
             {**reader(BOB, 3)}),
        Case("keyring-unwrap-fails", [("roster", R1)], garbage.sign(ROOT), "tampered",
             reader(ALICE, 2)),
    ]  # fmt: skip


def manifest_silences() -> list[Case]:
    from .generate import ALICE, BASE, BOB, PROJECT, R1_ROSTER, ROOT, Case, nxt, record, snap

    m1 = snap(ALICE, [record(ALICE, 1)])
    other_a1 = snap(ALICE, [record(ALICE, 8)]).manifest.head(SUITE)
    bob_saw_other = snap(BOB, [record(BOB, 1)], heads=[other_a1]).envelope
    root_saw_m1 = snap(ROOT, [record(ROOT, 1)], heads=[m1.manifest.head(SUITE)]).envelope
    s2 = snap(ALICE, [record(ALICE, 1), record(ALICE, 2)], seq=2, prev=m1.manifest.hash(SUITE))
    pinned = nxt(R1_ROSTER, revocations=(
        Revocation(ALICE.kid, 2, {PROJECT: Pin(2, s2.manifest.hash(SUITE))}),))  # fmt: skip
    other_s2 = snap(ALICE, [record(ALICE, 3)], seq=2, prev=m1.manifest.hash(SUITE)).envelope
    body = canonical.decode(m1.envelope)["body"]
    heads = seal({**body, "heads": [0] * (MAX_HEADS + 1)}, "manifest", ALICE)
    return [
        Case("manifest-equivocation-witnessed", [*BASE, ("manifest", bob_saw_other)],
             m1.envelope, "equivocation"),
        Case("manifest-equivocation-two-witnesses", [*BASE, ("manifest", bob_saw_other)],
             root_saw_m1, "equivocation"),
        Case("manifest-revoked-pin-other-hash", [*BASE, ("roster", pinned.sign(ROOT))],
             other_s2, "revoked"),
        Case("manifest-too-many-heads", BASE, heads, "too-large"),
    ]  # fmt: skip


def _delta_world() -> tuple[Snapshot, Snapshot, dict[str, bytes]]:
    from .generate import ALICE, record, snap

    recs = [record(ALICE, i) for i in range(1, 200)]
    full = snap(ALICE, recs)
    changed = [replace(recs[0], content="changed again", hlc=Hlc(recs[0].hlc.wall + 900, 0)),
               *recs[1:]]  # fmt: skip
    delta = snap(
        ALICE, changed, seq=2, prev=full.hash or "", listing=(full.manifest, full.hash or ""),
        previous=PreviousSnapshot(full.manifest, full.digests),
    )  # fmt: skip
    if delta.manifest.delta is None:
        raise SystemExit("the delta vector did not come out as a delta")
    return full, delta, {**full.new_chunks, **delta.new_chunks}


def delta_silences() -> list[Case]:
    from .generate import ALICE, BASE, Case, resign, with_chunks

    full, delta, chunks = _delta_world()
    d = delta.manifest.delta
    assert d is not None
    wire = canonical.decode(delta.envelope)["body"]

    def opened(*bases: bytes) -> dict[str, Any]:
        return {**with_chunks(full, chunks), "bases": [b64e(b) for b in bases]}

    rebuilt = delta.manifest.chunks
    spare = next(b for b in range(full.manifest.buckets)
                 if b not in {c.bucket for c in full.manifest.chunks})  # fmt: skip
    unlisted = {**wire, "removed": sorted([*wire["removed"], spare])}
    first_changed = wire["changed"][0]["bucket"]
    both = {**wire, "removed": sorted({*wire["removed"], first_changed})}
    full_body = canonical.decode(full.envelope)["body"]
    renumbered = {**full_body, "seq": 5}  # not its seq: another full manifest at seq 5
    renumbered_hash = Manifest.from_body(renumbered).hash(SUITE)
    other_seq = replace(delta.manifest, seq=6, delta=replace(d, base_hash=renumbered_hash))
    return [
        Case("manifest-delta-base-seq-not-below", BASE,
             resign(delta.envelope, ALICE, base={"seq": 2, "hash": d.base_hash}), "malformed"),
        Case("manifest-delta-changed-and-removed", BASE, seal(both, "manifest", ALICE),
             "malformed"),
        Case("snapshot-delta-base-malformed", BASE, delta.envelope, "missing-base",
             opened(b'{"body":{},"signer":"x","sig":""}')),
        Case("snapshot-delta-base-seq-other", BASE, other_seq.sign(ALICE), "tampered",
             opened(canonical.encode({**canonical.decode(full.envelope), "body": renumbered}))),
        Case("snapshot-delta-removed-unlisted", BASE, seal(unlisted, "manifest", ALICE),
             "tampered", opened(full.envelope)),
        Case("snapshot-delta-records-below-chunks", BASE,
             resign(delta.envelope, ALICE, records=len(rebuilt) - 1), "malformed",
             opened(full.envelope)),
    ]  # fmt: skip


def _chunk(writer: Any, payload: bytes, bucket: int) -> tuple[ChunkRef, bytes]:
    from .generate import KEY1, NONCES, PROJECT, TEAM

    ad = chunk_ad(TEAM, PROJECT, writer.kid, 1, bucket)
    data = KEY1.encrypt(SUITE.pad(zlib.compress(payload, 3)), ad, nonce=NONCES(24))
    return ChunkRef(bucket, chunk_id(SUITE, data), len(data)), data


def chunk_silences() -> list[Case]:
    from .generate import (
        ALICE,
        BASE,
        BOB,
        NOW,
        PROJECT,
        TEAM,
        Case,
        evil_chunk,
        record,
        with_chunks,
    )

    def in_bucket(b: int, n: int, start: int = 1) -> list[Any]:
        out, i = [], start
        while len(out) < n:
            r = record(ALICE, i)
            if bucket_of(SUITE, r.id, 64) == b:
                out.append(r)
            i += 1
        return out

    b0 = bucket_of(SUITE, record(ALICE, 1).id, 64)
    b1 = next(b for b in range(64) if b > b0)
    three = in_bucket(b0, 3)
    first = _chunk(ALICE, canonical.encode([r.to_wire() for r in three]), b0)
    bad = _chunk(ALICE, b'[{"id": 1}]', b1)

    def made(refs: list[tuple[ChunkRef, bytes]], records: int) -> tuple[bytes, dict[str, str]]:
        m = Manifest(TEAM, PROJECT, ALICE.kid, 1, None, 1, 1, 64,
                     tuple(r for r, _ in refs), records, (), NOW)  # fmt: skip
        return m.sign(ALICE), {r.id: b64e(c) for r, c in refs}

    hole_env, _ = made([first, bad], 2)
    stops_env, stops_chunks = made([first, bad], 2)
    bobs = replace(record(BOB, 1), id=three[0].id)
    wrong = [bobs.to_wire(), {**three[1].to_wire(), "kind": "Not A Kind"}]
    mixed = _chunk(ALICE, canonical.encode(wrong), b0)
    mixed_env, mixed_chunks = made([mixed], 2)
    key = b64e(b"\x11" * 32)
    one = record(ALICE, 1)
    level9 = evil_chunk(ALICE, canonical.encode([one.to_wire()]), bucket_of(SUITE, one.id, 64))
    return [
        Case("snapshot-zlib-level-9", BASE, level9.envelope, "accept", with_chunks(level9),
             records=1),
        Case("snapshot-running-count-hole", BASE, hole_env, "tampered",
             {"chunks": {first[0].id: b64e(first[1])}, "content_key": key}),
        Case("snapshot-running-count-stops", BASE, stops_env, "tampered",
             {"chunks": stops_chunks, "content_key": key}),
        Case("snapshot-record-by-record", BASE, mixed_env, "editor-mismatch",
             {"chunks": mixed_chunks, "content_key": key}),
    ]  # fmt: skip


def silence_cases() -> list[Case]:
    return [
        *roster_silences(), *keyring_silences(), *manifest_silences(), *delta_silences(),
        *chunk_silences(),
    ]  # fmt: skip
