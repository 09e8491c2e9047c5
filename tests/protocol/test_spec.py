"""SPEC.md cannot drift: its names match the code, and its pseudo-code computes what the code does.

The pseudo-code of the spec is re-implemented here with the standard library
only (hashlib, base64, zlib) and compared with ``sealmem.protocol`` running on
the real libsodium suite.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from sealmem.crypto import SUITE, MemberKey, padme
from sealmem.protocol import canonical, merge, reasons, verify
from sealmem.protocol.encoding import object_hash
from sealmem.protocol.envelope import CONTEXTS, seal, unpack
from sealmem.protocol.errors import Rejected
from sealmem.protocol.invite import INVITE_FORMAT, JOIN_FORMAT, MAX_INVITE_MS
from sealmem.protocol.keyring import KEYRING_FORMAT
from sealmem.protocol.manifest import MANIFEST_FORMAT, MAX_BUCKETS, MAX_CHUNK_BYTES, MAX_HEADS
from sealmem.protocol.roster import ROSTER_FORMAT
from sealmem.protocol.snapshot import SNAPSHOT_FORMAT, bucket_count, bucket_of, chunk_ad

SPEC = (Path(__file__).resolve().parents[2] / "protocol" / "SPEC.md").read_text("utf-8")


@pytest.mark.parametrize("reason", reasons.REASONS)
def test_every_rejection_reason_is_specified(reason: str) -> None:
    assert f"`{reason}`" in SPEC


def test_formats_contexts_and_limits_are_specified() -> None:
    for fmt in (ROSTER_FORMAT, KEYRING_FORMAT, MANIFEST_FORMAT, SNAPSHOT_FORMAT, INVITE_FORMAT,
                JOIN_FORMAT):  # fmt: skip
        assert f'"{fmt}"' in SPEC, fmt
    for context in CONTEXTS:
        assert f'b"sealmem/v1/{context}\\x00"' in SPEC, context
    for name in ("MAX_ROSTER_BYTES", "MAX_KEYRING_BYTES", "MAX_MANIFEST_BYTES"):
        value = getattr(verify, name)
        assert re.search(rf"`{name}` \| {value // 1024 // 1024} MiB", SPEC), name
    assert f"{MAX_CHUNK_BYTES // 1024 // 1024} MiB (one encrypted chunk)" in SPEC
    assert f"`MAX_BUCKETS` | {MAX_BUCKETS}" in SPEC
    assert f"`MAX_HEADS` | {MAX_HEADS:,}".replace(",", " ") in SPEC
    assert f"`{merge.SKIP_OTHER_PROJECT}`" in SPEC
    assert f"`MAX_INVITE_MS` is {MAX_INVITE_MS:,} ms".replace(",", " ") in SPEC
    assert merge.DEFAULT_GRACE_MS == 180 * 86_400_000
    assert "default 180 days" in SPEC


def spec_padme(length: int) -> int:
    if length < 2:
        return length
    e = length.bit_length() - 1
    s = e.bit_length()
    mask = 2 ** (e - s) - 1
    return (length + mask) & ~mask


def test_padme_pseudo_code() -> None:
    assert all(spec_padme(n) == padme(n) for n in range(0, 70_000, 7))
    assert SUITE.pad(b"abc") == b"abc" + b"\x80" + bytes(spec_padme(4) - 4)


def test_kid_pseudo_code() -> None:
    key = MemberKey(b"\x05" * 32, b"\x06" * 32)
    digest = hashlib.blake2b(key.sign_public, digest_size=32).digest()[:16]
    assert base64.b32encode(digest).decode().rstrip("=").lower() == key.kid


def test_object_hash_and_bucket_pseudo_code() -> None:
    body = {"format": MANIFEST_FORMAT, "seq": 3, "team": "acme-team"}
    expected = hashlib.blake2b(
        b"sealmem/v1/hash/manifest\x00" + canonical.encode(body), digest_size=32
    ).hexdigest()
    assert object_hash(SUITE, "manifest", body) == expected
    rid = "0199c82c-c010-7000-8000-000000000010"
    for buckets in (64, 256, 1024):
        digest = hashlib.blake2b(b"sealmem/v1/bucket\x00" + rid.encode(), digest_size=8).digest()
        assert bucket_of(SUITE, rid, buckets) == int.from_bytes(digest, "big") % buckets


def spec_bucket_count(n: int, previous: int | None) -> int:
    ideal = 64
    while ideal < 1024 and ideal * 64 < n:
        ideal *= 2
    if (
        previous is not None
        and 64 <= previous <= 1024
        and previous & (previous - 1) == 0
        and ideal / 4 <= previous <= ideal * 4
    ):
        return previous
    return ideal


@pytest.mark.parametrize("previous", [None, 32, 64, 128, 256, 512, 1024, 100])
def test_bucket_count_pseudo_code(previous: int | None) -> None:
    for n in (0, 1, 4096, 4097, 10_000, 40_000, 65_537, 10**6):
        assert bucket_count(n, previous) == spec_bucket_count(n, previous), (n, previous)


def test_chunk_associated_data_layout() -> None:
    ad = chunk_ad("acme-team", "app", "w" * 26, 3, 17)
    assert ad == json.dumps(
        {"format": "sealmem/snapshot/v1", "team": "acme-team", "project": "app",
         "writer": "w" * 26, "epoch": 3, "bucket": 17},
        sort_keys=True, separators=(",", ":"),
    ).encode()  # fmt: skip


def test_every_reason_has_a_row_in_the_reasons_table() -> None:
    table = SPEC[SPEC.index("### Reasons") :]
    table = table[: table.index("\n\n", table.index("| reason | meaning |"))]
    rows = re.findall(r"^\| `([a-z-]+)` \|", table, flags=re.MULTILINE)
    assert sorted(rows) == sorted(reasons.REASONS)


def test_box_key_from_seed_is_sha512_then_x25519() -> None:
    import nacl.bindings

    seed = b"\x66" * 32
    key = MemberKey(b"\x02" * 32, seed)
    secret = hashlib.sha512(seed).digest()[:32]
    assert nacl.bindings.crypto_scalarmult_base(secret) == key.box_public


def test_fingerprint_pseudo_code() -> None:
    key = MemberKey(b"\x05" * 32, b"\x06" * 32)
    digest = hashlib.blake2b(
        key.sign_public + key.box_public, digest_size=32, person=b"sealmem-fpr-v1"
    ).digest()
    text = base64.b32encode(digest).decode().lower()[:20]
    assert key.public().fingerprint() == "-".join(text[i : i + 4] for i in range(0, 20, 4))


def test_clock_bounds_are_specified() -> None:
    from sealmem.protocol import hlc

    assert hlc.MAX_AHEAD_MS == 172_800_000
    assert "`MAX_AHEAD_MS` | 172 800 000 ms (2 days)" in SPEC
    assert hlc.MAX_WALL_MS == 2**47 - 1
    assert "MAX_WALL_MS = 2^47 - 1" in SPEC
    assert hlc.MAX_COUNTER == 2**16 - 1
    assert "MAX_COUNTER = 2^16 - 1" in SPEC


@pytest.mark.parametrize(
    ("char", "spelled"),
    [("\x1b", "`\\u001b`"), ("\u2028", "U+2028"), ("\x7f", "DEL (U+007F)")],
)
def test_the_escape_table_says_what_encode_does(char: str, spelled: str) -> None:
    table = SPEC[SPEC.index("| character | written as |") :]
    assert spelled in table[: table.index("\n\n")]
    encoded = canonical.encode(char)
    literal = char not in "\x1b"
    assert (encoded == b'"' + char.encode() + b'"') is literal


def test_a_request_signature_offered_as_an_envelope_is_the_wrong_context() -> None:
    key = MemberKey(b"\x07" * 32, b"\x08" * 32)
    data = seal({"method": "GET", "target": "/v1/teams/t"}, "request", key)
    envelope = unpack(data, what="roster", max_bytes=1 << 20)
    with pytest.raises(Rejected) as refused:
        envelope.check(SUITE, "roster", key.sign_public)
    assert refused.value.reason == reasons.WRONG_CONTEXT


def test_the_whitespace_of_names_is_the_list_spec_gives() -> None:
    text = SPEC[SPEC.index("*Whitespace*, here and in Look-alike names, is exactly") :]
    listed = text[text.index("(") + 1 : text.index(")")].split()
    spec = set()
    for item in listed:
        low, _, high = item.removeprefix("U+").partition("-U+" if "-U+" in item else "-")
        spec |= set(range(int(low, 16), int(high or low, 16) + 1))
    assert spec == {cp for cp in range(0x110000) if chr(cp).isspace()}
