"""The nacl-backed implementation of the primitives ``sealmem.protocol`` asks for.

``protocol/`` stays free of nacl by declaring ``typing.Protocol`` interfaces;
:data:`SUITE` is the object the client and hub pass in to satisfy them.
"""

from __future__ import annotations

from . import hashing, padding, signing

__all__ = ["SUITE", "NaclSuite"]


class NaclSuite:
    """Verification, hashing, padding, ids and randomness, backed by libsodium."""

    __slots__ = ()

    def verify(self, sign_public: bytes, context: str, message: bytes, signature: bytes) -> None:
        signing.verify(sign_public, context, message, signature)

    def blake2b(self, data: bytes, size: int = 32, person: bytes = b"") -> bytes:
        return hashing.blake2b(data, size=size, person=person)

    def pad(self, data: bytes) -> bytes:
        return padding.pad(data)

    def unpad(self, data: bytes) -> bytes:
        return padding.unpad(data)

    def padme(self, length: int) -> int:
        return padding.padme(length)

    def kid_from_public(self, sign_public: bytes) -> str:
        return hashing.kid_from_public(sign_public)

    def random_bytes(self, n: int) -> bytes:
        return hashing.random_bytes(n)

    def equal(self, a: bytes, b: bytes) -> bool:
        return hashing.equal(a, b)

    def domain_message(self, context: str, message: bytes) -> bytes:
        return signing.domain_message(context, message)

    def __repr__(self) -> str:
        return "NaclSuite()"


SUITE = NaclSuite()
