"""ContentKey: XChaCha20-Poly1305 with associated data, and SealedBox wraps."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealmem.crypto import ContentKey, DecryptionError, MemberKey
from sealmem.protocol.errors import InputError
from tests.crypto.tamper import flip_byte

# draft-irtf-cfrg-xchacha-03, Appendix A.3.1.
VECTOR_KEY = bytes.fromhex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
VECTOR_NONCE = bytes.fromhex("404142434445464748494a4b4c4d4e4f5051525354555657")
VECTOR_AD = bytes.fromhex("50515253c0c1c2c3c4c5c6c7")
VECTOR_PLAINTEXT = (
    b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip "
    b"for the future, sunscreen would be it."
)
VECTOR_SEALED = bytes.fromhex(
    "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb"
    "731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452"
    "2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9"
    "21f9664c97637da9768812f615c68b13b52e"
    "c0875924c1c7987947deafd8780acf49"
)


def test_draft_vector() -> None:
    key = ContentKey(VECTOR_KEY)
    blob = key.encrypt(VECTOR_PLAINTEXT, VECTOR_AD, nonce=VECTOR_NONCE)
    assert blob == VECTOR_NONCE + VECTOR_SEALED
    assert key.decrypt(blob, VECTOR_AD) == VECTOR_PLAINTEXT


@given(plaintext=st.binary(max_size=2048), ad=st.binary(max_size=128))
def test_round_trip(plaintext: bytes, ad: bytes) -> None:
    key = ContentKey(b"\x07" * 32)
    blob = key.encrypt(plaintext, ad)
    assert len(blob) == ContentKey.NONCE_SIZE + len(plaintext) + 16
    assert key.decrypt(blob, ad) == plaintext


def test_random_nonces_differ(content_key: ContentKey) -> None:
    a = content_key.encrypt(b"same", b"ad")
    b = content_key.encrypt(b"same", b"ad")
    assert a[:24] != b[:24]
    assert a != b


def test_pinned_nonce_is_deterministic(content_key: ContentKey) -> None:
    nonce = bytes(24)
    assert content_key.encrypt(b"x", b"ad", nonce=nonce) == content_key.encrypt(
        b"x", b"ad", nonce=nonce
    )


@pytest.mark.parametrize(
    "index",
    [0, 23, 24, 30, -17, -16, -1],
    ids=["nonce-first", "nonce-last", "ct-first", "ct-mid", "ct-last", "tag-first", "tag-last"],
)
def test_flipped_blob_fails(content_key: ContentKey, index: int) -> None:
    blob = content_key.encrypt(b"a secret memory", b"team/project/writer")
    with pytest.raises(DecryptionError):
        content_key.decrypt(flip_byte(blob, index), b"team/project/writer")


@pytest.mark.parametrize("index", [0, 5, -1])
def test_flipped_ad_fails(content_key: ContentKey, index: int) -> None:
    ad = b"team/project/writer"
    blob = content_key.encrypt(b"a secret memory", ad)
    with pytest.raises(DecryptionError, match="associated data"):
        content_key.decrypt(blob, flip_byte(ad, index))


def test_wrong_key_fails(content_key: ContentKey) -> None:
    blob = content_key.encrypt(b"m", b"ad")
    with pytest.raises(DecryptionError):
        ContentKey.generate().decrypt(blob, b"ad")


@pytest.mark.parametrize("length", [0, 10, 24, 39])
def test_short_blob_fails(content_key: ContentKey, length: int) -> None:
    with pytest.raises(DecryptionError, match="shorter"):
        content_key.decrypt(bytes(length), b"ad")


def test_truncated_and_extended_blob_fail(content_key: ContentKey) -> None:
    blob = content_key.encrypt(b"payload", b"ad")
    for bad in (blob[:-1], blob + b"\x00"):
        with pytest.raises(DecryptionError):
            content_key.decrypt(bad, b"ad")


@pytest.mark.parametrize("size", [0, 16, 31, 33])
def test_key_size_is_checked(size: int) -> None:
    with pytest.raises(InputError, match="32 bytes"):
        ContentKey(bytes(size))


@pytest.mark.parametrize("size", [0, 12, 23, 25])
def test_nonce_size_is_checked(content_key: ContentKey, size: int) -> None:
    with pytest.raises(InputError, match="24 bytes"):
        content_key.encrypt(b"m", b"ad", nonce=bytes(size))


def test_wrap_unwrap(content_key: ContentKey, alice: MemberKey) -> None:
    wrapped = content_key.wrap_to(alice.box_public)
    assert content_key._key not in wrapped
    assert len(wrapped) == 32 + 48  # ephemeral public key + MAC + key
    assert ContentKey.unwrap(wrapped, alice) == content_key
    assert content_key.wrap_to(alice.box_public) != wrapped  # fresh ephemeral key each time


def test_unwrap_by_wrong_recipient_fails(
    content_key: ContentKey, alice: MemberKey, bob: MemberKey
) -> None:
    wrapped = content_key.wrap_to(alice.box_public)
    with pytest.raises(DecryptionError, match=bob.kid):
        ContentKey.unwrap(wrapped, bob)


@pytest.mark.parametrize("index", [0, 31, 32, -1])
def test_flipped_wrap_fails(content_key: ContentKey, alice: MemberKey, index: int) -> None:
    wrapped = content_key.wrap_to(alice.box_public)
    with pytest.raises(DecryptionError):
        ContentKey.unwrap(flip_byte(wrapped, index), alice)


def test_unwrap_refuses_wrong_size_payload(alice: MemberKey) -> None:
    import nacl.public

    sealed = nacl.public.SealedBox(nacl.public.PublicKey(alice.box_public)).encrypt(bytes(16))
    with pytest.raises(DecryptionError, match="16 bytes"):
        ContentKey.unwrap(sealed, alice)


def test_unwrap_garbage_fails(alice: MemberKey) -> None:
    for garbage in (b"", b"x" * 10, bytes(80)):
        with pytest.raises(DecryptionError):
            ContentKey.unwrap(garbage, alice)


def test_wrap_to_refuses_bad_public_key(content_key: ContentKey) -> None:
    with pytest.raises(InputError):
        content_key.wrap_to(bytes(31))


def test_key_id_equality_and_repr(content_key: ContentKey) -> None:
    same = ContentKey(bytes(range(0x80, 0xA0)))
    other = ContentKey.generate()
    assert same == content_key
    assert hash(same) == hash(content_key)
    assert other != content_key
    assert content_key != bytes(range(0x80, 0xA0))  # a key is not equal to its bytes
    kid = content_key.key_id()
    assert kid == same.key_id() != other.key_id()
    assert len(kid) == 16
    assert kid.isalnum()
    text = repr(content_key) + str(content_key)
    assert kid in text
    raw = content_key._key
    for form in (raw.hex(), repr(raw), raw.hex()[:16]):
        assert form not in text
    assert not hasattr(content_key, "__bytes__")
