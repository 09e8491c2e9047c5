"""Domain-separated Ed25519 signatures, kids and hashing."""

from __future__ import annotations

import base64
import hashlib
import re

import nacl.signing
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealmem.crypto import (
    DOMAIN_PREFIX,
    SUITE,
    BadSignatureError,
    MemberKey,
    blake2b,
    domain_message,
    equal,
    kid_from_public,
    random_bytes,
    verify,
)
from sealmem.protocol.errors import InputError
from tests.crypto.tamper import flip_byte

# RFC 8032 §7.1, TEST 1: the seed and the public key it must give.
RFC8032_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC8032_PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")


def test_domain_message_layout() -> None:
    assert DOMAIN_PREFIX == b"sealmem/v1/"
    assert domain_message("roster", b"{}") == b"sealmem/v1/roster\x00{}"
    assert domain_message("join-request", b"") == b"sealmem/v1/join-request\x00"


@pytest.mark.parametrize("context", ["", "Roster", "1roster", "ros ter", "ros/ter", "x" * 65, "é"])
def test_bad_context_is_refused(alice: MemberKey, context: str) -> None:
    with pytest.raises(InputError, match="context"):
        domain_message(context, b"m")
    with pytest.raises(InputError):
        alice.sign(context, b"m")


def test_sign_verify_round_trip(alice: MemberKey) -> None:
    sig = alice.sign("roster", b"payload")
    assert len(sig) == 64
    verify(alice.sign_public, "roster", b"payload", sig)
    SUITE.verify(alice.sign_public, "roster", b"payload", sig)


def test_signature_is_ed25519_over_the_domain_message(alice: MemberKey) -> None:
    raw = nacl.signing.SigningKey(bytes(range(32))).sign(b"sealmem/v1/manifest\x00abc").signature
    assert alice.sign("manifest", b"abc") == raw


def test_rfc8032_seed_gives_the_rfc_public_key() -> None:
    key = MemberKey(RFC8032_SEED, bytes(32))
    assert key.sign_public == RFC8032_PUBLIC


def test_domain_separation(alice: MemberKey) -> None:
    sig = alice.sign("roster", b"same bytes")
    with pytest.raises(BadSignatureError, match="'manifest'"):
        verify(alice.sign_public, "manifest", b"same bytes", sig)


def test_plain_ed25519_signature_does_not_verify(alice: MemberKey) -> None:
    undomained = nacl.signing.SigningKey(bytes(range(32))).sign(b"payload").signature
    with pytest.raises(BadSignatureError):
        verify(alice.sign_public, "roster", b"payload", undomained)


@pytest.mark.parametrize("index", [0, 31, 32, 63])
def test_flipped_signature_fails(alice: MemberKey, index: int) -> None:
    sig = alice.sign("roster", b"payload")
    with pytest.raises(BadSignatureError):
        verify(alice.sign_public, "roster", b"payload", flip_byte(sig, index))


@pytest.mark.parametrize("index", [0, 3, -1])
def test_flipped_message_fails(alice: MemberKey, index: int) -> None:
    sig = alice.sign("roster", b"payload")
    with pytest.raises(BadSignatureError):
        verify(alice.sign_public, "roster", flip_byte(b"payload", index), sig)


def test_wrong_signer_fails(alice: MemberKey, bob: MemberKey) -> None:
    with pytest.raises(BadSignatureError):
        verify(bob.sign_public, "roster", b"payload", alice.sign("roster", b"payload"))


@pytest.mark.parametrize(
    ("key_len", "sig_len"), [(31, 64), (33, 64), (0, 64), (32, 63), (32, 65), (32, 0)]
)
def test_wrong_lengths_raise_bad_signature(alice: MemberKey, key_len: int, sig_len: int) -> None:
    sig = alice.sign("roster", b"m")
    key = (alice.sign_public * 2)[:key_len]
    bad_sig = (sig * 2)[:sig_len]
    with pytest.raises(BadSignatureError):
        verify(key, "roster", b"m", bad_sig)


@given(
    message=st.binary(max_size=256), context=st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
)
def test_round_trip_any_message(message: bytes, context: str) -> None:
    key = MemberKey(b"\x01" * 32, b"\x02" * 32)
    verify(key.sign_public, context, message, key.sign(context, message))


def test_kid_matches_independent_computation(alice: MemberKey) -> None:
    digest = hashlib.blake2b(alice.sign_public, digest_size=32).digest()
    expected = base64.b32encode(digest[:16]).decode().rstrip("=").lower()
    assert alice.kid == expected == kid_from_public(alice.sign_public)
    assert SUITE.kid_from_public(alice.sign_public) == expected


def test_kid_format() -> None:
    for _ in range(20):
        key = MemberKey.generate()
        assert re.fullmatch(r"[a-z2-7]{26}", key.kid), key.kid


def test_kid_refuses_wrong_length() -> None:
    with pytest.raises(InputError, match="32 bytes"):
        kid_from_public(b"\x00" * 31)


_PERSONALIZED = "02eddebf221f08f504e66bfb2a1fedf7"


def test_blake2b_known_answers() -> None:
    # RFC 7693, Appendix A: BLAKE2b-512("abc").
    assert blake2b(b"abc", size=64).hex() == (
        "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
        "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
    )
    # libsodium's crypto_generichash with a personalization, computed once with PyNaCl.
    assert blake2b(b"sealmem", size=16, person=b"chunk").hex() == _PERSONALIZED
    assert (
        SUITE.blake2b(b"sealmem", size=20) == hashlib.blake2b(b"sealmem", digest_size=20).digest()
    )


@pytest.mark.parametrize(("size", "person"), [(0, b""), (65, b""), (32, b"x" * 17)])
def test_blake2b_refuses_bad_parameters(size: int, person: bytes) -> None:
    with pytest.raises(InputError):
        blake2b(b"x", size=size, person=person)


def test_equal_and_random_bytes() -> None:
    assert equal(b"abc", b"abc")
    assert not equal(b"abc", b"abd")
    assert not equal(b"abc", b"abcd")
    a, b = random_bytes(32), random_bytes(32)
    assert len(a) == 32
    assert a != b
    assert random_bytes(0) == b""
    with pytest.raises(InputError):
        random_bytes(-1)
