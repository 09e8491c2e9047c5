"""Hashing, identifiers, randomness and constant-time comparison.

``kid_from_public`` is the member id of DESIGN §4: lowercase base32 (no
padding) of the first 16 bytes of BLAKE2b-256 of the Ed25519 public key,
26 characters from ``[a-z2-7]``.
"""

from __future__ import annotations

import base64
import hashlib

import nacl.bindings
import nacl.utils

from ..protocol.errors import InputError

__all__ = [
    "BLAKE2B_MAX_SIZE",
    "PERSON_MAX_SIZE",
    "b32",
    "blake2b",
    "equal",
    "kid_from_public",
    "random_bytes",
]

BLAKE2B_MAX_SIZE = 64
PERSON_MAX_SIZE = 16


def blake2b(data: bytes, *, size: int = 32, person: bytes = b"") -> bytes:
    """BLAKE2b of ``data`` with a ``size``-byte digest and optional personalization."""
    if not 1 <= size <= BLAKE2B_MAX_SIZE:
        raise InputError(f"BLAKE2b digest size {size} refused: it must be 1..{BLAKE2B_MAX_SIZE}")
    if len(person) > PERSON_MAX_SIZE:
        raise InputError(
            f"BLAKE2b personalization of {len(person)} bytes refused: "
            f"it must be at most {PERSON_MAX_SIZE} bytes"
        )
    # The standard library's BLAKE2b (RFC 7693) gives the same digest as
    # libsodium's crypto_generichash, without PyNaCl's per-call overhead, which
    # dominated hashing many small ids (bucket assignment).
    return hashlib.blake2b(data, digest_size=size, person=person).digest()


def b32(data: bytes) -> str:
    """Lowercase base32 without padding: the text form of ids and fingerprints."""
    return base64.b32encode(data).decode("ascii").rstrip("=").lower()


def kid_from_public(sign_public: bytes) -> str:
    """The member id (kid) of an Ed25519 public key."""
    if len(sign_public) != nacl.bindings.crypto_sign_PUBLICKEYBYTES:
        raise InputError(
            f"signing public key of {len(sign_public)} bytes refused: "
            f"an Ed25519 public key is exactly {nacl.bindings.crypto_sign_PUBLICKEYBYTES} bytes"
        )
    return b32(blake2b(sign_public, size=32)[:16])


def equal(a: bytes, b: bytes) -> bool:
    """Compare two byte strings in constant time (for equal lengths)."""
    return nacl.bindings.sodium_memcmp(bytes(a), bytes(b))


def random_bytes(n: int) -> bytes:
    """``n`` bytes from the operating system's CSPRNG (through libsodium)."""
    if n < 0:
        raise InputError(f"random_bytes({n}) refused: the count must not be negative")
    return nacl.utils.random(n)
