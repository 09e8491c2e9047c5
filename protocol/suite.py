"""The crypto that protocol/ needs, as duck-typed interfaces.

protocol/ never imports nacl.  The objects of ``sealmem.crypto`` satisfy these
:class:`typing.Protocol` classes structurally, so the verifier and the
snapshot builder take them as arguments and stay pure: every key, nonce and
random byte comes in from the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["ContentKeyLike", "RandomSource", "Signer", "Suite", "Wrapper"]


class Suite(Protocol):
    """Public-key operations and hashing (``sealmem.crypto.SUITE``)."""

    def verify(self, sign_public: bytes, context: str, message: bytes, signature: bytes) -> None:
        """Raise ``BadSignatureError`` unless ``signature`` covers the domain message."""
        ...

    def blake2b(self, data: bytes, *, size: int = 32) -> bytes: ...

    def pad(self, data: bytes) -> bytes: ...

    def unpad(self, data: bytes) -> bytes:
        """Raise ``DecryptionError`` on bad padding."""
        ...

    def kid_from_public(self, sign_public: bytes) -> str: ...

    def __hash__(self) -> int:
        """A suite is one immutable object: results that depend on it may be cached."""
        ...


class Signer(Protocol):
    """A member's signing key (``sealmem.crypto.MemberKey``)."""

    @property
    def kid(self) -> str: ...

    def sign(self, context: str, message: bytes) -> bytes: ...


class ContentKeyLike(Protocol):
    """A project epoch key (``sealmem.crypto.ContentKey``)."""

    def encrypt(self, plaintext: bytes, ad: bytes, *, nonce: bytes | None = None) -> bytes: ...

    def decrypt(self, blob: bytes, ad: bytes) -> bytes:
        """Raise ``DecryptionError`` on any failure."""
        ...


class Wrapper(Protocol):
    """A content key that can be sealed to a member's X25519 key (keyring building)."""

    def wrap_to(self, box_public: bytes) -> bytes: ...

    def commitment(self) -> str:
        """Lowercase hex BLAKE2b-256 of the key (person ``sealmem-keycmt-1``)."""
        ...


RandomSource = Callable[[int], bytes]
"""``n`` random bytes (``sealmem.crypto.random_bytes``, or pinned bytes in vectors)."""
