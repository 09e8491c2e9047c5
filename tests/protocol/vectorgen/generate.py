"""Write the protocol test vectors: one JSON file per case, in ``protocol/vectors/``.

Run from the repository root::

    python -m tests.protocol.vectorgen.generate          # write new or changed cases
    python -m tests.protocol.vectorgen.generate --force  # rewrite every file

Keys come from fixed seeds and nonces are pinned, so signatures and chunks are
reproducible; keyring wraps (SealedBox) are randomised, which is why the
generated files are committed and tests never regenerate them.  Without
``--force`` a file whose description and expected outcome are unchanged is
kept as it is (its randomised wraps would otherwise churn on every run).
The building blocks on their own (canonical JSON, ids, hashes, base64,
padding, buckets) and the objects outside the chain (hub request signatures,
merge) come from :mod:`basics`, invites, join requests and their admission from
:mod:`invites`; the rules the others leave uncaught (SPEC.md names the vectors of
every MUST) from :mod:`silences` and :mod:`fields`, generated last so that the pinned nonces of the
others stay as they were; SPEC.md "Test vectors" documents every object kind.

Each file holds::

    {"description": str,
     "inputs": {"team": str, "root_public": b64url,
                "setup":  [{"kind": "roster"|"keyring"|"manifest", "data": b64url}],
                "object": {"kind": "roster"|"keyring"|"manifest"|"snapshot",
                           "data": b64url, "project"?: str, "writer"?: str,
                           "chunks"?: {id: b64url}, "content_key"?: b64url,
                           "reader"?: {"sign_seed": b64url, "box_seed": b64url}}},
     "expected": "accept" | {"reject": reason}
                 | {"partial": {"holes": [{"bucket": int, "reason": reason}]}},
     "records"?: int,          # for an accepted snapshot: how many records open (read
                               # in part: how many the chunks that verify hold)
     "output"?: {...}}         # for a derivation: the values it computes

To replay a case: pin (team, root_public), accept every setup object in
order (each must be accepted), then accept the object (for ``snapshot``:
accept the manifest, then open its chunks with the content key; for a
``keyring`` with a ``reader``: unwrap the reader's key with the member key of
those seeds and check it against the keyring's ``key_id``).
"""

from __future__ import annotations

import json
import sys
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sealmem.crypto import SUITE, ContentKey, MemberKey
from sealmem.protocol import canonical
from sealmem.protocol.chunks import MAX_BUCKET_PLAINTEXT
from sealmem.protocol.encoding import b64d, b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.hlc import MAX_AHEAD_MS, MAX_WALL_MS, Hlc
from sealmem.protocol.keyring import build_keyring, extend_keyring
from sealmem.protocol.manifest import MAX_RECORDS, ChunkRef, Delta, Manifest, chunk_root
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.roster import Grant, Member, Pin, Reset, Revocation, Roster
from sealmem.protocol.snapshot import (
    PreviousSnapshot,
    Snapshot,
    bucket_of,
    build_snapshot,
    chunk_ad,
    chunk_id,
)

from .basics import Vector, basic_vectors
from .invites import invite_family
from .own_chain import own_chain_vectors
from .signatures import DESCRIPTIONS as SIGNATURE_DESCRIPTIONS
from .signatures import signature_cases
from .silences import DESCRIPTIONS as SILENCE_DESCRIPTIONS
from .writers import writer_vectors

VECTORS = Path(__file__).resolve().parents[3] / "protocol" / "vectors"
TEAM = "acme-team"
PROJECT = "webapp"
NOW = 1_760_000_000_000
READER_NOW = NOW + 60_000  # the reader's clock when a snapshot vector names none


def key(n: int) -> MemberKey:
    return MemberKey(bytes([n]) * 32, bytes([n + 100]) * 32)


ROOT, ALICE, BOB, MALLORY, CAROL = key(1), key(2), key(3), key(4), key(5)
KEY1 = ContentKey(b"\x11" * 32)
KEY2 = ContentKey(b"\x22" * 32)


class Nonces:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, size: int) -> bytes:
        self.n += 1
        return self.n.to_bytes(size, "big")


NONCES = Nonces()


def member(k: MemberKey, name: str, role: str = "member") -> Member:
    return Member(k.kid, name, k.sign_public, k.box_public, role, False)


def record(writer: MemberKey, i: int, project: str = PROJECT) -> Record:
    return Record(
        id=new_memory_id(NOW + i, i.to_bytes(10, "big")),
        project=project,
        kind="decision",
        content=f"vector memory {i}",
        keywords=("vector",),
        importance=0.25,
        author=writer.kid,
        editor=writer.kid,
        created_at=NOW + i,
        hlc=Hlc(NOW + i, 0),
    )


def v1() -> Roster:
    members = (member(ROOT, "root", "admin"), member(ALICE, "alice"), member(BOB, "bob"))
    return Roster(
        team=TEAM,
        version=1,
        prev=None,
        admins=(ROOT.kid,),
        members=members,
        projects={PROJECT: 1},
        grants=tuple(Grant(m.kid, PROJECT) for m in members),
        created_at=NOW,
    ).check(SUITE)


def nxt(old: Roster, **changes: Any) -> Roster:
    return old.successor(SUITE, created_at=NOW + old.version, **changes).check(SUITE)


def flip(data: bytes, index: int) -> bytes:
    out = bytearray(data)
    out[index] ^= 0x01
    return bytes(out)


def resign(envelope: bytes, signer: MemberKey, context: str = "manifest", **body: Any) -> bytes:
    """The envelope's body with ``body`` changes, signed again by ``signer``."""
    old = canonical.decode(envelope)["body"]
    return seal({**old, **body}, context, signer)


def flip_sig(envelope: bytes) -> bytes:
    obj = canonical.decode(envelope)
    sig = bytearray(b64d(obj["sig"]))
    sig[10] ^= 0x01
    return canonical.encode({**obj, "sig": b64e(bytes(sig))})


def snap(writer: MemberKey, records: list[Record], **kw: Any) -> Snapshot:
    args: dict[str, Any] = {
        "team": TEAM, "project": PROJECT, "epoch": 1, "roster_version": 1, "seq": 1,
        "prev": None, "random": NONCES, "created_at": NOW,
    }  # fmt: skip
    args.update(kw)
    content_key = args.pop("key", KEY1)
    return build_snapshot(SUITE, content_key, writer, records=records, **args)


def evil_chunk(
    writer: MemberKey, payload: bytes, bucket: int, *, ad_bucket: int | None = None,
    compress: bool = True, nonce_flip: bool = False, records: int = 1,
) -> Snapshot:  # fmt: skip
    """A manifest (signed by ``writer``) over one hand-made chunk in ``bucket``."""
    ad = chunk_ad(TEAM, PROJECT, writer.kid, 1, bucket if ad_bucket is None else ad_bucket)
    body = zlib.compress(payload, 9) if compress else payload
    chunk = KEY1.encrypt(SUITE.pad(body), ad, nonce=NONCES(24))
    if nonce_flip:
        chunk = flip(chunk, 3)
    ref = ChunkRef(bucket, chunk_id(SUITE, chunk), len(chunk))
    m = Manifest(TEAM, PROJECT, writer.kid, 1, None, 1, 1, 64, (ref,), records, (), NOW)
    return Snapshot(m, m.sign(writer), {ref.id: chunk}, {})


DESCRIPTIONS = {
    "roster-v1-accept": "first roster, signed by the pinned root",
    "roster-v2-accept": "next version signed by an admin of v1",
    "roster-v1-again": "re-reading the trusted version is harmless",
    "roster-v1-not-root": "v1 signed by a key other than the pinned root",
    "roster-v2-not-admin": "v2 signed by a member who was no admin in v1",
    "roster-rollback": "an older version than the trusted one",
    "roster-fork": "a second, different v2",
    "roster-skip": "v3 without v2: the chain must be fetched first",
    "roster-prev-mismatch": "v2 whose prev is not v1's hash",
    "roster-epoch-lowered": "a version that lowers a project's epoch",
    "roster-cross-team": "a roster of another team",
    "roster-unknown-format": "a future roster format",
    "roster-malformed-kid": "a member whose kid does not match its signing key",
    "roster-not-canonical": "whitespace inside the envelope",
    "roster-signature-flip": "one bit of the signature flipped",
    "roster-header-flip": "one byte of the signed body changed",
    "roster-wrong-context": "a roster body signed as a keyring",
    "keyring-accept": "epoch 1 keyring signed by the root admin",
    "keyring-not-admin": "keyring signed by a plain member",
    "keyring-epoch-unknown": "epoch 2 while the cited roster says 1",
    "keyring-roster-unknown": "cites a roster version not yet trusted",
    "keyring-no-read-grant": "wraps the key to a non-member too",
    "keyring-fork": "a second, different keyring for a trusted epoch",
    "keyring-unknown-project": "a project the roster does not list",
    "keyring-cross-team": "a keyring of another team",
    "keyring-signature-flip": "one bit of the signature flipped",
    "keyring-revoked-admin": "signed by an admin who has been revoked since",
    "keyring-update-accept": "the trusted epoch re-published, citing roster v2 that adds carol",
    "keyring-update-other-key": "an update citing roster v2 whose key_id differs",
    "keyring-update-rollback": "the v1 keyring again after its v2 update was trusted",
    "keyring-update-same-roster": "the same epoch and roster re-wrapped: other bytes",
    "keyring-history-accept": "epoch 1 re-published citing roster v2 (at epoch 2) with carol",
    "keyring-history-newcomer": "the same, to a reader that never trusted an epoch 1 keyring",
    "keyring-history-revoked": "an older epoch citing a roster that revoked bob keeps his wrap",
    "keyring-history-dropped-reader": "an older epoch re-published without alice, still a reader",
    "keyring-history-other-key": "an older epoch re-published with another key_id",
    "keyring-history-rollback": "epoch 1 citing v2 after its update citing v3 was trusted",
    "keyring-history-future-epoch": "epoch 3 citing roster v2, which is at epoch 2",
    "keyring-history-never-epoch": "epoch 2 of a project that went from epoch 1 to 3",
    "keyring-unwrap-accept": "alice unwraps the key and it matches key_id",
    "keyring-unwrap-tampered": "alice's wrap holds another key than key_id commits to",
    "manifest-accept": "a member's first manifest",
    "manifest-again": "the trusted manifest again",
    "manifest-next": "seq 2 chaining to the trusted seq 1",
    "manifest-gap": "seq 3 after seq 1: gaps are allowed",
    "manifest-rollback": "seq 1 after seq 2 was trusted",
    "manifest-fork": "another seq 1",
    "manifest-fork-prev": "seq 2 whose prev is not the trusted seq 1",
    "manifest-unknown-writer": "signed by a key that is not in the roster",
    "manifest-no-write-grant": "a reader-only member writes",
    "manifest-revoked": "a revoked writer, past its pinned seq",
    "manifest-revoked-pinned": "a revoked writer's pinned manifest stays valid",
    "manifest-reset": "an admin reset lets a restored writer start a new chain",
    "manifest-reset-replay": "the lost chain cannot come back after a reset",
    "manifest-reset-replay-fresh": "a reader who never saw the lost chain refuses it too",
    "manifest-epoch-unknown": "an epoch with no trusted keyring",
    "manifest-roster-unknown": "cites a roster newer than the trusted one",
    "manifest-cross-team": "a manifest of another team",
    "manifest-cross-project": "served from another project's folder",
    "manifest-unknown-project": "a project the roster does not list",
    "manifest-signer-mismatch": "names alice as writer, signed by bob",
    "manifest-misfiled": "alice's manifest served from bob's slot",
    "manifest-wrong-context": "a manifest body signed as a join request",
    "manifest-signature-flip": "one bit of the signature flipped",
    "manifest-header-flip": "seq changed after signing",
    "manifest-not-canonical": "trailing newline after the envelope",
    "manifest-unknown-format": "a future manifest format",
    "manifest-malformed": "seq is a string",
    "manifest-too-large": "claims more records than the limit",
    "manifest-equivocation": "bob witnessed another alice seq 1 than the one we trust",
    "snapshot-accept": "39 records in several chunks, opened with the epoch key",
    "snapshot-missing-chunk": "one chunk not supplied",
    "snapshot-ciphertext-flip": "one ciphertext byte flipped in transit",
    "snapshot-tag-flip": "the last byte (the Poly1305 tag) flipped in transit",
    "snapshot-nonce-flip": "a nonce byte flipped before the writer hashed and signed",
    "snapshot-ad-flip": "encrypted with another bucket's associated data",
    "snapshot-not-compressed": "a plaintext that is not zlib",
    "snapshot-bomb": "decompresses past the size cap",
    "snapshot-editor-mismatch": "a record edited by bob inside alice's snapshot",
    "snapshot-cross-project": "a record of another project",
    "snapshot-wrong-bucket": "a record in a bucket its id does not hash to",
    "snapshot-not-canonical": "plaintext JSON with spaces",
    "snapshot-malformed-record": "a record with an unknown field",
    "snapshot-count-mismatch": "the manifest says 2 records, its chunk holds 1",
    "snapshot-clock-ahead": "a record 2 days and 1 ms ahead of the reader's clock",
    "snapshot-clock-ahead-limit": "a record exactly 2 days ahead of the reader's clock is kept",
    "snapshot-hlc-out-of-range": "a record whose hlc wall is 2^47 (one past the limit)",
    "snapshot-zlib-trailing": "bytes after the end of the zlib stream",
    "snapshot-zlib-truncated": "a zlib stream cut short",
    "snapshot-lone-surrogate": "a record whose content holds an escaped lone surrogate",
    "snapshot-delta-accept": "a delta manifest (one record changed) rebuilt from its full base",
    "snapshot-delta-wrong-root": "a delta whose chunk_root is not the hash of the rebuilt list",
    "snapshot-delta-base-not-full": "a delta listed against another delta, not a full manifest",
    "snapshot-delta-epoch-mismatch": "a delta at epoch 1 listed against a base at epoch 2",
    "snapshot-delta-bucket-mismatch": "a delta of 64 buckets listed against a base of 128",
    "snapshot-delta-other-chain": "a delta of alice listed against a full manifest of bob",
    "snapshot-delta-missing-base": "a delta whose base is not supplied",
    "manifest-short-signature": "a 63-byte signature",
    "keyring-wrap-too-large": "a wrap of 257 bytes once decoded (the limit is 256)",
    "keyring-wrap-at-limit": "a wrap of exactly 256 decoded bytes passes the size check",
    "roster-lone-surrogate": "a member name holding an escaped lone surrogate",
}

DESCRIPTIONS.update(SIGNATURE_DESCRIPTIONS)
DESCRIPTIONS.update(SILENCE_DESCRIPTIONS)

Step = tuple[str, bytes] | tuple[str, bytes, tuple[bytes, ...]]
Setup = list[Step]  # (kind, data); a delta manifest may add the bases it is accepted with


def _setup_json(step: Step) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": step[0], "data": b64e(step[1])}
    if len(step) == 3:
        out["bases"] = [b64e(b) for b in step[2]]
    return out


@dataclass
class Case:
    name: str
    setup: Setup
    data: bytes
    expected: str
    extra: dict[str, Any] | None = None
    records: int | None = None
    holes: list[dict[str, Any]] | None = None  # expected "partial": the chunks left out

    def to_json(self) -> dict[str, Any]:
        kind = self.name.split("-")[0]
        obj: dict[str, Any] = {"kind": kind, "data": b64e(self.data), **(self.extra or {})}
        out: dict[str, Any] = {
            "description": DESCRIPTIONS[self.name],
            "inputs": {
                "team": TEAM,
                "root_public": b64e(ROOT.sign_public),
                "setup": [_setup_json(step) for step in self.setup],
                "object": obj,
            },
            "expected": "accept" if self.expected == "accept" else {"reject": self.expected},
        }
        if self.holes is not None:
            out["expected"] = {"partial": {"holes": self.holes}}
        if self.records is not None:
            out["records"] = self.records
        return out


def with_chunks(s: Snapshot, chunks: dict[str, bytes] | None = None) -> dict[str, Any]:
    given = dict(s.new_chunks) if chunks is None else chunks
    return {
        "chunks": {cid: b64e(c) for cid, c in given.items()},
        "content_key": b64e(b"\x11" * 32),
    }


R1_ROSTER = v1()
R1 = R1_ROSTER.sign(ROOT)
K1 = build_keyring(KEY1, R1_ROSTER, PROJECT).sign(ROOT)
BASE: Setup = [("roster", R1), ("keyring", K1)]
ALICE_ADMIN = nxt(
    R1_ROSTER,
    admins=(ROOT.kid, ALICE.kid),
    members=(R1_ROSTER.members[0], member(ALICE, "alice", "admin"), R1_ROSTER.members[2]),
)


def roster_cases() -> list[Case]:
    r1, only_r1 = R1_ROSTER, [("roster", R1)]
    r2 = nxt(r1, projects={PROJECT: 1, "docs": 1})
    r3 = nxt(r2, projects={PROJECT: 2, "docs": 1})
    R2, R3 = r2.sign(ROOT), r3.sign(ROOT)
    bad_kid = r1.to_body()
    bad_kid["members"][1]["kid"] = BOB.kid
    lowered = nxt(r3, projects={PROJECT: 1, "docs": 1}).sign(ROOT)
    extending = "roster-not-extending"
    return [
        Case("roster-v1-accept", [], R1, "accept"),
        Case("roster-v2-accept", only_r1, R2, "accept"),
        Case("roster-v1-again", only_r1, R1, "accept"),
        Case("roster-v1-not-root", [], r1.sign(ALICE), "not-admin"),
        Case("roster-v2-not-admin", only_r1, ALICE_ADMIN.sign(ALICE), "not-admin"),
        Case("roster-rollback", [*only_r1, ("roster", R2)], R1, "rollback"),
        Case("roster-fork", [*only_r1, ("roster", R2)], nxt(r1).sign(ROOT), "fork"),
        Case("roster-skip", only_r1, nxt(r2).sign(ROOT), extending),
        Case("roster-prev-mismatch", only_r1, replace(r2, prev="ab" * 32).sign(ROOT), extending),
        Case(
            "roster-epoch-lowered", [*only_r1, ("roster", R2), ("roster", R3)], lowered, extending
        ),
        Case("roster-cross-team", [], resign(R1, ROOT, "roster", team="other-team"), "cross-team"),
        Case(
            "roster-unknown-format",
            [],
            resign(R1, ROOT, "roster", format="sealmem/roster/v3"),
            "unknown-format",
        ),
        Case("roster-malformed-kid", [], seal(bad_kid, "roster", ROOT), "malformed"),
        Case(
            "roster-not-canonical", [], R1.replace(b'"version":1', b'"version": 1'), "not-canonical"
        ),
        Case("roster-signature-flip", [], flip_sig(R1), "bad-signature"),
        Case(
            "roster-header-flip", [], R1.replace(b'"name":"bob"', b'"name":"bop"'), "bad-signature"
        ),
        Case("roster-wrong-context", [], resign(R1, ROOT, "keyring"), "wrong-context"),
    ]


def keyring_cases() -> list[Case]:
    only_r1: Setup = [("roster", R1)]
    kr = build_keyring(KEY1, R1_ROSTER, PROJECT)
    leak = replace(kr, wraps={**kr.wraps, MALLORY.kid: KEY1.wrap_to(MALLORY.box_public)})
    other = build_keyring(KEY2, R1_ROSTER, PROJECT).sign(ROOT)
    revoked = nxt(ALICE_ADMIN, revocations=(Revocation(ALICE.kid, 3),))
    by_revoked = build_keyring(KEY1, ALICE_ADMIN, PROJECT).sign(ALICE)
    revoked_setup: Setup = [
        *only_r1,
        ("roster", ALICE_ADMIN.sign(ROOT)),
        ("roster", revoked.sign(ROOT)),
    ]
    return [
        Case("keyring-accept", only_r1, K1, "accept"),
        Case("keyring-not-admin", only_r1, kr.sign(ALICE), "not-admin"),
        Case("keyring-epoch-unknown", only_r1, replace(kr, epoch=2).sign(ROOT), "epoch-unknown"),
        Case(
            "keyring-roster-unknown",
            only_r1,
            replace(kr, roster_version=2).sign(ROOT),
            "roster-unknown",
        ),
        Case("keyring-no-read-grant", only_r1, leak.sign(ROOT), "no-read-grant"),
        Case("keyring-fork", BASE, other, "fork"),
        Case(
            "keyring-unknown-project",
            only_r1,
            replace(kr, project="nope").sign(ROOT),
            "unknown-project",
        ),
        Case(
            "keyring-cross-team", only_r1, replace(kr, team="other-team").sign(ROOT), "cross-team"
        ),
        Case("keyring-signature-flip", only_r1, flip_sig(K1), "bad-signature"),
        Case("keyring-revoked-admin", revoked_setup, by_revoked, "revoked"),
    ]


def reader(k: MemberKey, n: int) -> dict[str, Any]:
    """The seeds of ``key(n)``: a vector's reader unwraps with them."""
    if k != key(n):
        raise ValueError(f"reader seeds do not give member {k.kid}")
    return {"reader": {"sign_seed": b64e(bytes([n]) * 32), "box_seed": b64e(bytes([n + 100]) * 32)}}


def keyring_update_cases() -> list[Case]:
    grants = (*R1_ROSTER.grants, Grant(CAROL.kid, PROJECT, True, False))
    joined = nxt(R1_ROSTER, members=(*R1_ROSTER.members, member(CAROL, "carol")), grants=grants)
    update = build_keyring(KEY1, joined, PROJECT).sign(ROOT)
    with_r2: Setup = [*BASE, ("roster", joined.sign(ROOT))]
    kr = build_keyring(KEY1, R1_ROSTER, PROJECT)
    swapped = replace(kr, wraps={**kr.wraps, ALICE.kid: KEY2.wrap_to(ALICE.box_public)})
    only_r1: Setup = [("roster", R1)]
    return [
        Case("keyring-update-accept", with_r2, update, "accept", reader(CAROL, 5)),
        Case(
            "keyring-update-other-key",
            with_r2,
            build_keyring(KEY2, joined, PROJECT).sign(ROOT),
            "fork",
        ),
        Case("keyring-update-rollback", [*with_r2, ("keyring", update)], K1, "rollback"),
        Case("keyring-update-same-roster", BASE, kr.sign(ROOT), "fork"),
        Case("keyring-unwrap-accept", only_r1, K1, "accept", reader(ALICE, 2)),
        Case("keyring-unwrap-tampered", only_r1, swapped.sign(ROOT), "tampered", reader(ALICE, 2)),
    ]


def keyring_history_cases() -> list[Case]:
    """An older epoch re-published citing a newer roster (a newcomer reads the history)."""
    base = build_keyring(KEY1, R1_ROSTER, PROJECT)
    grants = (*R1_ROSTER.grants, Grant(CAROL.kid, PROJECT, True, False))
    members = (*R1_ROSTER.members, member(CAROL, "carol"))
    r2 = nxt(R1_ROSTER, members=members, grants=grants, projects={PROJECT: 2})
    r3 = nxt(r2, revocations=(Revocation(BOB.kid, 3),), projects={PROJECT: 3})
    history2 = extend_keyring(base, KEY1, r2, [CAROL.kid])
    history3 = extend_keyring(history2, KEY1, r3, [])
    with_r2: Setup = [*BASE, ("roster", r2.sign(ROOT))]
    with_r3: Setup = [*with_r2, ("roster", r3.sign(ROOT))]
    no_alice = {k: w for k, w in history2.wraps.items() if k != ALICE.kid}
    jumped = nxt(R1_ROSTER, projects={PROJECT: 3})
    return [
        Case("keyring-history-accept", with_r2, history2.sign(ROOT), "accept", reader(CAROL, 5)),
        Case(
            "keyring-history-newcomer",
            [("roster", R1), ("roster", r2.sign(ROOT))],
            history2.sign(ROOT),
            "accept",
            reader(CAROL, 5),
        ),
        Case(
            "keyring-history-revoked",
            with_r3,
            replace(history3, wraps=history2.wraps).sign(ROOT),
            "no-read-grant",
        ),
        Case(
            "keyring-history-dropped-reader",
            with_r2,
            replace(history2, wraps=no_alice).sign(ROOT),
            "fork",
        ),
        Case(
            "keyring-history-other-key",
            with_r2,
            replace(history2, key_id=KEY2.commitment()).sign(ROOT),
            "fork",
        ),
        Case(
            "keyring-history-rollback",
            [*with_r3, ("keyring", history3.sign(ROOT))],
            history2.sign(ROOT),
            "rollback",
        ),
        Case(
            "keyring-history-future-epoch",
            with_r2,
            replace(history2, epoch=3).sign(ROOT),
            "epoch-unknown",
        ),
        Case(
            "keyring-history-never-epoch",
            [*BASE, ("roster", jumped.sign(ROOT))],
            replace(extend_keyring(base, KEY1, jumped, []), epoch=2).sign(ROOT),
            "epoch-unknown",
        ),
    ]


def manifest_cases() -> list[Case]:
    s1 = snap(ALICE, [record(ALICE, 1)])
    s2 = snap(ALICE, [record(ALICE, 1), record(ALICE, 2)], seq=2, prev=s1.manifest.hash(SUITE))
    s3 = snap(ALICE, [record(ALICE, 3)], seq=3, prev=s2.manifest.hash(SUITE))
    M1, M2, M3 = s1.envelope, s2.envelope, s3.envelope
    after1: Setup = [*BASE, ("manifest", M1)]
    r1 = R1_ROSTER
    bob_reads = tuple(replace(g, write=False) if g.kid == BOB.kid else g for g in r1.grants)
    read_only = [*BASE, ("roster", nxt(r1, grants=bob_reads).sign(ROOT))]
    pin = Pin(2, s2.manifest.hash(SUITE))
    revoked = [
        *BASE,
        ("roster", nxt(r1, revocations=(Revocation(ALICE.kid, 2, {PROJECT: pin}),)).sign(ROOT)),
    ]
    reset_roster = ("roster", nxt(r1, resets=(Reset(ALICE.kid, PROJECT, 2),)).sign(ROOT))
    fresh = snap(ALICE, [record(ALICE, 5)], roster_version=2).envelope
    other_a1 = snap(ALICE, [record(ALICE, 8)]).manifest.head(SUITE)
    witness = snap(BOB, [record(BOB, 1)], heads=[other_a1]).envelope
    return [
        Case("manifest-accept", BASE, M1, "accept"),
        Case("manifest-again", after1, M1, "accept"),
        Case("manifest-next", after1, M2, "accept"),
        Case("manifest-gap", after1, M3, "accept"),
        Case("manifest-rollback", [*after1, ("manifest", M2)], M1, "rollback"),
        Case("manifest-fork", after1, snap(ALICE, [record(ALICE, 9)]).envelope, "fork"),
        Case(
            "manifest-fork-prev",
            after1,
            snap(ALICE, [record(ALICE, 9)], seq=2, prev="cd" * 32).envelope,
            "fork",
        ),
        Case(
            "manifest-unknown-writer",
            BASE,
            snap(MALLORY, [record(MALLORY, 1)]).envelope,
            "unknown-writer",
        ),
        Case(
            "manifest-no-write-grant",
            read_only,
            snap(BOB, [record(BOB, 1)]).envelope,
            "no-write-grant",
        ),
        Case("manifest-revoked", revoked, M3, "revoked"),
        Case("manifest-revoked-pinned", revoked, M2, "accept"),
        Case("manifest-reset", [*BASE, ("manifest", M2), reset_roster], fresh, "accept"),
        Case("manifest-reset-replay", [*after1, reset_roster, ("manifest", fresh)], M3, "rollback"),
        Case("manifest-reset-replay-fresh", [*BASE, reset_roster], M3, "rollback"),
        Case(
            "manifest-epoch-unknown",
            BASE,
            snap(ALICE, [record(ALICE, 1)], epoch=2, key=KEY2).envelope,
            "epoch-unknown",
        ),
        Case(
            "manifest-roster-unknown",
            BASE,
            snap(ALICE, [record(ALICE, 1)], roster_version=5).envelope,
            "roster-unknown",
        ),
        Case("manifest-cross-team", BASE, resign(M1, ALICE, team="other-team"), "cross-team"),
        Case("manifest-cross-project", BASE, M1, "cross-project", extra={"project": "docs"}),
        Case(
            "manifest-unknown-project", BASE, resign(M1, ALICE, project="docs"), "unknown-project"
        ),
        Case("manifest-signer-mismatch", BASE, resign(M1, BOB), "signer-mismatch"),
        Case("manifest-misfiled", BASE, M1, "signer-mismatch", extra={"writer": BOB.kid}),
        Case("manifest-wrong-context", BASE, resign(M1, ALICE, "join"), "wrong-context"),
        Case("manifest-signature-flip", BASE, flip_sig(M1), "bad-signature"),
        Case("manifest-header-flip", BASE, M1.replace(b'"seq":1', b'"seq":7'), "bad-signature"),
        Case("manifest-not-canonical", BASE, M1 + b"\n", "not-canonical"),
        Case(
            "manifest-unknown-format",
            BASE,
            resign(M1, ALICE, format="sealmem/manifest/v9"),
            "unknown-format",
        ),
        Case("manifest-malformed", BASE, resign(M1, ALICE, seq="1"), "malformed"),
        Case("manifest-too-large", BASE, resign(M1, ALICE, records=MAX_RECORDS + 1), "too-large"),
        Case("manifest-equivocation", after1, witness, "equivocation"),
    ]


def snapshot_cases() -> list[Case]:
    s = snap(ALICE, [record(ALICE, i) for i in range(1, 40)])
    first = next(iter(s.new_chunks))

    def flipped(at: int) -> dict[str, bytes]:
        return {k: (flip(v, at % len(v)) if k == first else v) for k, v in s.new_chunks.items()}

    missing = {k: v for k, v in s.new_chunks.items() if k != first}
    # a chunk the transport lost or damaged is a hole: the others are read (SPEC "Partial
    # reads"; these three were refused whole before)
    [ref] = [c for c in s.manifest.chunks if c.id == first]
    inside = [i for i in range(1, 40) if bucket_of(SUITE, record(ALICE, i).id, 64) == ref.bucket]
    left = 39 - len(inside)

    def hole(reason: str) -> list[dict[str, Any]]:
        return [{"bucket": ref.bucket, "reason": reason}]

    out = [
        Case("snapshot-accept", BASE, s.envelope, "accept", with_chunks(s), records=39),
        Case(
            "snapshot-missing-chunk",
            BASE,
            s.envelope,
            "partial",
            with_chunks(s, missing),
            records=left,
            holes=hole("missing-chunk"),
        ),
        Case(
            "snapshot-ciphertext-flip",
            BASE,
            s.envelope,
            "partial",
            with_chunks(s, flipped(60)),
            records=left,
            holes=hole("bad-chunk-id"),
        ),
        Case(
            "snapshot-tag-flip",
            BASE,
            s.envelope,
            "partial",
            with_chunks(s, flipped(-1)),
            records=left,
            holes=hole("bad-chunk-id"),
        ),
    ]
    one = record(ALICE, 1)
    b = bucket_of(SUITE, one.id, 64)
    wire = canonical.encode([one.to_wire()])
    bobs = record(BOB, 1)
    evil: list[tuple[str, bytes, int, dict[str, Any], str]] = [
        ("snapshot-nonce-flip", wire, b, {"nonce_flip": True}, "tampered"),
        ("snapshot-ad-flip", wire, b, {"ad_bucket": (b + 1) % 64}, "tampered"),
        ("snapshot-not-compressed", wire, b, {"compress": False}, "tampered"),
        ("snapshot-bomb", b"\x00" * (MAX_BUCKET_PLAINTEXT + 1), b, {}, "too-large"),
        (
            "snapshot-editor-mismatch",
            canonical.encode([bobs.to_wire()]),
            bucket_of(SUITE, bobs.id, 64),
            {},
            "editor-mismatch",
        ),
        (
            "snapshot-cross-project",
            canonical.encode([record(ALICE, 1, "docs").to_wire()]),
            b,
            {},
            "cross-project",
        ),
        ("snapshot-wrong-bucket", wire, (b + 1) % 64, {}, "wrong-bucket"),
        ("snapshot-not-canonical", b'[{"id": 1}]', b, {}, "not-canonical"),
        (
            "snapshot-malformed-record",
            canonical.encode([{**one.to_wire(), "x": 1}]),
            b,
            {},
            "malformed",
        ),
        ("snapshot-count-mismatch", wire, b, {"records": 2}, "tampered"),
    ]
    wild = {**one.to_wire(), "hlc": [MAX_WALL_MS + 1, 0]}
    surrogate = wire.replace(b'"vector memory 1"', b'"vector \\ud800 memory"')
    evil += [
        ("snapshot-hlc-out-of-range", canonical.encode([wild]), b, {}, "malformed"),
        ("snapshot-zlib-trailing", zlib.compress(wire) + b"\x00", b, {"compress": False},
         "tampered"),
        ("snapshot-zlib-truncated", zlib.compress(wire)[:-3], b, {"compress": False}, "tampered"),
        ("snapshot-lone-surrogate", surrogate, b, {}, "not-canonical"),
    ]  # fmt: skip
    for name, payload, bucket, kw, expected in evil:
        made = evil_chunk(ALICE, payload, bucket, **kw)
        out.append(Case(name, BASE, made.envelope, expected, with_chunks(made)))
    for name, ahead, expected in (
        ("snapshot-clock-ahead", MAX_AHEAD_MS + 1, "clock-ahead"),
        ("snapshot-clock-ahead-limit", MAX_AHEAD_MS, "accept"),
    ):
        future = replace(record(ALICE, 1), hlc=Hlc(READER_NOW + ahead, 0))
        made = snap(ALICE, [future])
        extra = {**with_chunks(made), "now_ms": READER_NOW}
        out.append(Case(name, BASE, made.envelope, expected, extra, records=1))
    return out


def delta_cases() -> list[Case]:
    """Delta manifests: ``bases`` are the envelopes offered as the delta's base."""
    recs = [record(ALICE, i) for i in range(1, 200)]
    full = snap(ALICE, recs)
    listing = (full.manifest, full.hash or "")
    changed = [replace(recs[0], content="changed", hlc=Hlc(NOW + 500, 0)), *recs[1:]]
    delta = snap(
        ALICE, changed, seq=2, prev=listing[1], listing=listing,
        previous=PreviousSnapshot(full.manifest, full.digests),
    )  # fmt: skip
    if delta.manifest.delta is None:
        raise SystemExit("the delta vector did not come out as a delta")
    chunks = {**full.new_chunks, **delta.new_chunks}

    def opened(*bases: bytes) -> dict[str, Any]:
        return {**with_chunks(full, chunks), "bases": [b64e(b) for b in bases]}

    def listed(base: Manifest, seq: int = 2) -> bytes:
        m = replace(delta.manifest, seq=seq, delta=None).against(SUITE, base, base.hash(SUITE))
        return m.sign(ALICE)

    rebuilt = delta.manifest.chunks
    second = replace(
        delta.manifest, seq=3,
        delta=Delta(2, delta.hash or "", (), (), chunk_root(SUITE, rebuilt)),
    )  # fmt: skip
    epoch2 = snap(ALICE, recs, epoch=2, key=KEY2).manifest
    wide = replace(full.manifest, buckets=128)
    bobs = snap(BOB, [record(BOB, i) for i in range(1, 20)]).manifest
    return [
        Case("snapshot-delta-accept", BASE, delta.envelope, "accept", opened(full.envelope),
             records=199),
        Case("snapshot-delta-wrong-root", BASE, resign(delta.envelope, ALICE, chunk_root="00" * 32),
             "tampered", opened(full.envelope)),
        Case("snapshot-delta-base-not-full", BASE, second.sign(ALICE), "tampered",
             opened(full.envelope, delta.envelope)),
        Case("snapshot-delta-epoch-mismatch", BASE, listed(epoch2), "tampered",
             opened(epoch2.sign(ALICE))),
        Case("snapshot-delta-bucket-mismatch", BASE, listed(wide), "tampered",
             opened(wide.sign(ALICE))),
        Case("snapshot-delta-other-chain", BASE, listed(bobs), "tampered", opened(bobs.sign(BOB))),
        Case("snapshot-delta-missing-base", BASE, delta.envelope, "missing-base", opened()),
    ]  # fmt: skip


def extra_envelope_cases() -> list[Case]:
    """Envelope and field sizes; a lone surrogate in a signed body."""
    m1 = snap(ALICE, [record(ALICE, 1)]).envelope
    obj = canonical.decode(m1)
    short = canonical.encode({**obj, "sig": b64e(b64d(obj["sig"])[:63])})
    kr = build_keyring(KEY1, R1_ROSTER, PROJECT)
    only_r1: Setup = [("roster", R1)]

    def wrap_of(size: int) -> bytes:
        return replace(kr, wraps={**kr.wraps, ALICE.kid: bytes(size)}).sign(ROOT)

    return [
        Case("manifest-short-signature", BASE, short, "malformed"),
        Case("keyring-wrap-too-large", only_r1, wrap_of(257), "too-large"),
        Case("keyring-wrap-at-limit", only_r1, wrap_of(256), "accept"),
        Case(
            "roster-lone-surrogate",
            [],
            R1.replace(b'"name":"bob"', b'"name":"b\\ud800"'),
            "not-canonical",
        ),
    ]


def cases() -> list[Case]:
    from .freshness import DESCRIPTIONS as FRESHNESS
    from .freshness import freshness_cases
    from .silences import silence_cases
    from .witness import DESCRIPTIONS as WITNESS
    from .witness import witness_cases

    DESCRIPTIONS.update(FRESHNESS)
    DESCRIPTIONS.update(WITNESS)
    return [
        *freshness_cases(),
        *roster_cases(),
        *keyring_cases(),
        *keyring_update_cases(),
        *keyring_history_cases(),
        *manifest_cases(),
        *snapshot_cases(),
        *delta_cases(),
        *extra_envelope_cases(),
        *signature_cases(),
        *silence_cases(),  # the pinned nonces of the cases above stay as they were
        *witness_cases(),  # (added after them, for the same reason)
    ]


def vector_json(v: Vector) -> dict[str, Any]:
    out: dict[str, Any] = {
        "description": v.description,
        "inputs": {"team": TEAM, "root_public": b64e(ROOT.sign_public), "setup": [],
                   "object": v.obj},
        "expected": "accept" if v.expected == "accept" else {"reject": v.expected},
    }  # fmt: skip
    if v.output is not None:
        out["output"] = v.output
    return out


def _same_case(path: Path, doc: dict[str, Any]) -> bool:
    if not path.exists():
        return False
    old = json.loads(path.read_text(encoding="utf-8"))
    return bool(
        old.get("description") == doc["description"] and old.get("expected") == doc["expected"]
    )


def main(argv: list[str] | None = None) -> int:
    force = "--force" in (sys.argv[1:] if argv is None else argv)
    docs = {case.name: case.to_json() for case in cases()}
    names = list(docs)
    if set(names) != set(DESCRIPTIONS):
        raise SystemExit("each case must have a description, and each description a case")
    from .fields import silence_vectors

    for v in [
        *basic_vectors(),
        *invite_family(),
        *writer_vectors(),
        *silence_vectors(),
        *own_chain_vectors(),
    ]:
        if v.name in docs:
            raise SystemExit(f"vector name {v.name} is used twice")
        docs[v.name] = vector_json(v)
    from .devices import device_docs
    from .private import private_docs
    from .settings import settings_docs
    from .sizes import size_docs

    for name, doc in {**device_docs(), **size_docs(), **settings_docs(), **private_docs()}.items():
        if name in docs:
            raise SystemExit(f"vector name {name} is used twice")
        docs[name] = doc
    for old in VECTORS.glob("*.json"):
        if force or old.stem not in docs:
            old.unlink()
    written = 0
    for name, doc in docs.items():
        path = VECTORS / f"{name}.json"
        if not force and _same_case(path, doc):
            continue
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        written += 1
    print(f"{len(docs)} vectors in {VECTORS}; wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
