"""Vectors for the building blocks on their own, and for the objects outside the chain.

Each builder returns :class:`Vector` values; ``generate.py`` writes them in the
same file format as the chain vectors (SPEC.md "Test vectors").  A derivation
case (``kid``, ``object-hash``, ``padme``, ``bucket``, ``request``, ``merge``)
names its computed values in ``output``; a parse case (``canonical``,
``base64``, ``unpad``) is accepted or refused by name.  Invites, join
requests and their admission are in :mod:`invites`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

from sealmem.crypto import SUITE, MemberKey, padme
from sealmem.crypto.request import request_message, sign_request
from sealmem.protocol import canonical
from sealmem.protocol.encoding import b64d, b64e, object_hash
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.merge import merge_many
from sealmem.protocol.record import Record, new_memory_id
from sealmem.protocol.snapshot import bucket_count, bucket_of

__all__ = ["Vector", "basic_vectors"]

TEAM = "acme-team"
PROJECT = "webapp"
NOW = 1_760_000_000_000


@dataclass(frozen=True)
class Vector:
    name: str
    description: str
    obj: dict[str, Any]
    expected: str  # "accept" or a reason
    output: dict[str, Any] | None = None


def _key(n: int) -> MemberKey:
    return MemberKey(bytes([n]) * 32, bytes([n + 100]) * 32)


def canonical_vectors() -> list[Vector]:
    ok = [
        ("escapes", "the short escapes and lowercase \\u00xx for the other C0 controls",
         b'"\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001b\\u001f/"'),
        ("literal-utf8", "DEL, U+2028, U+2029, a BOM, non-ASCII and astral characters stay literal",
         '"\x7f\u2028\u2029\ufeffé\U0001f600"'.encode()),
        ("key-order", "keys sort by code point: Z < z < é < U+E000 < U+1F600 (not UTF-16 order)",
         '{"Z":1,"z":2,"é":3,"\ue000":4,"\U0001f600":5}'.encode()),
        ("integers", "the ends of the signed 64-bit range",
         b"[-9223372036854775808,0,9223372036854775807]"),
    ]  # fmt: skip
    bad = [
        ("lone-surrogate", "an escaped lone surrogate: no UTF-8 form", b'"\\ud800"'),
        ("lone-surrogate-key", "a lone surrogate as an object key", b'{"\\udfff":1}'),
        ("escaped-pair", "a surrogate pair escaped where literal UTF-8 is canonical",
         b'"\\ud83d\\ude00"'),
        ("utf8-surrogate", "a surrogate encoded as UTF-8 bytes (ED A0 80)", b'"\xed\xa0\x80"'),
        ("escaped-ascii", "an ASCII letter escaped", b'"\\u0041"'),
        ("escaped-slash", "a solidus escaped", b'"\\/"'),
        ("uppercase-hex", "a control escaped with uppercase hex", b'"\\u001B"'),
        ("long-escape", "a control with a short escape spelled long", b'"\\u000a"'),
        ("utf16-key-order", "keys in UTF-16 order instead of code point order",
         '{"\U0001f600":1,"\ue000":2}'.encode()),
        ("duplicate-key", "a key twice", b'{"a":1,"a":1}'),
        ("whitespace", "a space after a colon", b'{"a": 1}'),
        ("float", "a number with a fraction", b"[1.0]"),
        ("exponent", "a number with an exponent", b"[1e3]"),
        ("minus-zero", "-0", b"[-0]"),
        ("out-of-range", "an integer past 2^63-1", b"[9223372036854775808]"),
        ("bom", "a byte order mark", b"\xef\xbb\xbf[]"),
        ("trailing-newline", "a newline after the value", b"[]\n"),
    ]  # fmt: skip
    out = [
        Vector(f"canonical-{n}", d, {"kind": "canonical", "data": b64e(data)}, "accept")
        for n, d, data in ok
    ]
    for _, _, data in ok:
        canonical.decode(data)  # the generator refuses to write a wrong accept case
    out += [
        Vector(f"canonical-{n}", d, {"kind": "canonical", "data": b64e(data)}, "not-canonical")
        for n, d, data in bad
    ]
    return out


def kid_vectors() -> list[Vector]:
    out = []
    for n in (1, 2):
        k = _key(n)
        sign_seed, box_seed = bytes([n]) * 32, bytes([n + 100]) * 32
        box_secret = hashlib.sha512(box_seed).digest()[:32]
        out.append(
            Vector(
                f"kid-seed-{n}",
                "keys from seeds: Ed25519 from the signing seed, "
                "X25519 from SHA-512(box seed)[:32]",
                {"kind": "kid", "sign_seed": b64e(sign_seed), "box_seed": b64e(box_seed)},
                "accept",
                {
                    "sign_public": b64e(k.sign_public),
                    "box_secret": b64e(box_secret),
                    "box_public": b64e(k.box_public),
                    "kid": k.kid,
                    "fingerprint": k.public().fingerprint(),
                },
            )
        )
    return out


def hash_vectors() -> list[Vector]:
    bodies = [
        ("roster", {"format": "sealmem/roster/v1", "team": TEAM, "version": 1}),
        ("manifest", {"format": "sealmem/manifest/v1", "seq": 3, "team": TEAM}),
    ]
    return [
        Vector(
            f"object-hash-{kind}",
            f"object_hash({kind!r}, body) over the body's canonical bytes",
            {"kind": "object-hash", "hash_kind": kind, "body": b64e(canonical.encode(body))},
            "accept",
            {"hash": object_hash(SUITE, kind, body)},
        )
        for kind, body in bodies
    ]


def base64_vectors() -> list[Vector]:
    ok = [("empty", ""), ("one-byte", "_w"), ("two-bytes", "-_8"), ("three-bytes", "AQID")]
    bad = [
        ("padding", "_w==", "'=' padding"),
        ("standard-alphabet", "+/8", "the standard alphabet's + and /"),
        ("whitespace", "AQ ID", "a space"),
        ("trailing-bits", "_x", "non-zero trailing bits (_x and _w both decode to FF)"),
        ("one-char-tail", "AQIDB", "a length of 1 mod 4"),
    ]
    out = [
        Vector(f"base64-{n}", f"unpadded base64url {text!r}", {"kind": "base64", "text": text},
               "accept", {"hex": _b64(text).hex()})
        for n, text in ok
    ]  # fmt: skip
    out += [
        Vector(f"base64-{n}", f"refused: {why}", {"kind": "base64", "text": text}, "malformed")
        for n, text, why in bad
    ]
    return out


def _b64(text: str) -> bytes:
    return b64d(text)


def padding_vectors() -> list[Vector]:
    lengths = [0, 1, 2, 3, 9, 16, 17, 100, 1000, 1025, 65_537, 1_000_000, 16_777_217]
    out = [
        Vector(
            "padme-lengths",
            "padme(L) for lengths around powers of two",
            {"kind": "padme", "lengths": lengths},
            "accept",
            {"padded": [padme(n) for n in lengths]},
        )
    ]
    good = SUITE.pad(b"abc")
    cases = [
        ("unpad-accept", "pad('abc') unpads to 'abc'", good, "accept"),
        ("unpad-no-marker", "zeros only, no 0x80 marker", bytes(8), "tampered"),
        ("unpad-empty", "no bytes at all", b"", "tampered"),
        ("unpad-extra-zero", "one zero byte more than padme asks", good + b"\x00", "tampered"),
        ("unpad-short", "17 bytes ending in the marker where padme(17) = 18", b"a" * 16 + b"\x80",
         "tampered"),
        ("unpad-wrong-marker", "0x01 where the marker must be", b"abc\x01", "tampered"),
    ]  # fmt: skip
    for name, desc, data, expected in cases:
        output = {"content": b64e(SUITE.unpad(data))} if expected == "accept" else None
        out.append(Vector(name, desc, {"kind": "unpad", "data": b64e(data)}, expected, output))
    return out


def bucket_vectors() -> list[Vector]:
    rid = new_memory_id(NOW, bytes(range(10)))
    cases = [(0, None), (4096, None), (4097, None), (65_537, None), (10**6, None),
             (10_000, 64), (10_000, 32), (100, 1024), (100, 4096), (10_000, 100)]  # fmt: skip
    return [
        Vector(
            "bucket-count",
            "bucket_count(records, previous) and bucket_of(id, buckets)",
            {
                "kind": "bucket",
                "counts": [[n, p] for n, p in cases],
                "id": rid,
                "buckets": [64, 128, 256, 1024, 4096],
            },
            "accept",
            {
                "counts": [bucket_count(n, p) for n, p in cases],
                "of": [bucket_of(SUITE, rid, b) for b in (64, 128, 256, 1024, 4096)],
            },
        )
    ]


def request_vectors() -> list[Vector]:
    alice = _key(2)
    target = f"/v1/teams/{TEAM}/projects/{PROJECT}/manifests/{alice.kid}/7?limit=2"
    body = b'{"example":true}'
    nonce = bytes(range(16))
    headers = sign_request(alice, "put", target, body, now_ms=NOW, nonce=nonce)
    digest = hashlib.blake2b(body, digest_size=32).hexdigest()
    message = request_message("PUT", target, digest, NOW, b64e(nonce), alice.kid)
    base = {
        "kind": "request", "sign_public": b64e(alice.sign_public), "method": "PUT",
        "target": target, "body": b64e(body), "time": NOW, "nonce": b64e(nonce),
        "request_kid": alice.kid, "signature": headers["sealmem-signature"],
    }  # fmt: skip
    out = [
        Vector("request-accept", "a signed hub request: the headers and the signed message",
               base, "accept", {"message": b64e(message), "headers": headers}),
        Vector("request-other-target", "the signature of one path presented for another",
               {**base, "target": target.replace("/7?", "/8?")}, "bad-signature"),
        Vector("request-other-body", "the same headers over another body",
               {**base, "body": b64e(b'{"example":false}')}, "bad-signature"),
        Vector("request-other-time", "the time header changed",
               {**base, "time": NOW + 1}, "bad-signature"),
    ]  # fmt: skip
    return out + digest_vectors(base, headers, message)


def digest_vectors(base: dict[str, Any], headers: dict[str, str], message: bytes) -> list[Vector]:
    """The body digest in its own header (``digest``): the signature verifies from the
    headers alone, then the body must hash to that digest."""
    sent = {**base, "digest": headers["sealmem-digest"]}
    other = b'{"example":false}'
    return [
        Vector("request-digest-accept", "a signed hub request as sent: the five headers, "
               "the digest header among them", sent, "accept",
               {"message": b64e(message), "headers": headers}),
        Vector("request-digest-mismatch", "the signature covers the digest header; the body "
               "sent does not hash to it", {**sent, "body": b64e(other)}, "digest-mismatch"),
        Vector("request-digest-other", "the digest header changed to the other body's: the "
               "signature does not cover it", {**sent, "body": b64e(other),
               "digest": hashlib.blake2b(other, digest_size=32).hexdigest()}, "bad-signature"),
    ]  # fmt: skip


def _rec(i: int, editor: MemberKey, hlc: tuple[int, int], importance: float = 0.5,
         content: str = "", project: str = PROJECT, deleted: bool = False) -> Record:  # fmt: skip
    return Record(
        id=new_memory_id(NOW + i, i.to_bytes(10, "big")), project=project, kind="note",
        content="" if deleted else (content or f"memory {i}"), keywords=(),
        importance=importance, author=editor.kid, editor=editor.kid, created_at=NOW + i,
        hlc=Hlc(*hlc), deleted=deleted, delete_reason="obsolete" if deleted else None,
    ).validate()  # fmt: skip


def merge_vectors() -> list[Vector]:
    alice, bob = _key(2), _key(3)
    a1 = _rec(1, alice, (NOW, 0), importance=0.9, content="alice's first version")
    b1 = replace(a1, editor=bob.kid, content="bob's edit", importance=0.2, hlc=Hlc(NOW + 5, 0))
    b_same = replace(b1, hlc=Hlc(NOW, 0), content="bob, same clock")
    old = replace(a1, hlc=Hlc(NOW - 5, 3), content="an older version")
    tomb = replace(a1, editor=bob.kid, content="", deleted=True, delete_reason="wrong",
                   hlc=Hlc(NOW + 9, 0))  # fmt: skip
    other = replace(a1, project="docs", hlc=Hlc(NOW + 50, 0), content="same id, other project")
    now, clock = NOW + 1000, Hlc(NOW + 2000, 4)
    cases = [
        ("merge-newer-wins-floor", "a newer version wins; the local importance becomes a floor",
         [a1], [b1], {}),
        ("merge-older-loses", "an older version does not replace the winner", [a1], [old], {}),
        ("merge-same-clock-editor", "same clock: the greater editor kid wins", [a1], [b_same], {}),
        ("merge-tombstone", "a newer tombstone wins like any version", [a1], [b1, tomb], {}),
        ("merge-other-project", "the same id in another project is skipped", [a1], [other], {}),
        ("merge-into-empty", "an empty replica takes every version, clock follows", [],
         [old, a1, b1], {a1.id: 0.95}),
    ]  # fmt: skip
    out = []
    for name, desc, state, incoming, floors in cases:
        result = merge_many(
            {r.id: r for r in state}, incoming, now_ms=now, clock=clock, floors=floors
        )
        out.append(
            Vector(
                name,
                desc,
                {
                    "kind": "merge",
                    "state": [r.to_wire() for r in state],
                    "incoming": [r.to_wire() for r in incoming],
                    "floors": {k: round(v * 1000) for k, v in floors.items()},
                    "now_ms": now,
                    "clock": clock.to_wire(),
                },
                "accept",
                {
                    "winners": {k: v.to_wire() for k, v in sorted(result.winners.items())},
                    "floors": {k: round(v * 1000) for k, v in sorted(result.floors.items())},
                    "changed": list(result.changed),
                    "skipped": [[s.record.id, s.reason] for s in result.skipped],
                    "clock": result.clock.to_wire(),
                },
            )
        )
    return out


def basic_vectors() -> list[Vector]:
    return [
        *canonical_vectors(),
        *kid_vectors(),
        *hash_vectors(),
        *base64_vectors(),
        *padding_vectors(),
        *bucket_vectors(),
        *request_vectors(),
        *merge_vectors(),
    ]
