"""Project content keys (DESIGN §4, §5): XChaCha20-Poly1305-IETF with associated data.

A blob is ``nonce (24 bytes) || ciphertext || tag (16 bytes)``.  The nonce is
random unless a test pins it.  A content key travels to members wrapped in a
SealedBox to their X25519 key.
"""

from __future__ import annotations

import nacl.bindings
import nacl.exceptions
import nacl.public

from ..protocol.errors import DecryptionError, InputError
from .hashing import b32, blake2b, equal, random_bytes
from .keys import BOX_PUBLIC_SIZE, MemberKey

__all__ = ["ContentKey"]

_KEY_ID_PERSON = b"sealmem-keyid-v1"
_COMMIT_PERSON = b"sealmem-keycmt-1"


class ContentKey:
    """A 32-byte XChaCha20-Poly1305 key for one project epoch."""

    SIZE: int = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_KEYBYTES
    NONCE_SIZE: int = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
    TAG_SIZE: int = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_ABYTES

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes) or len(key) != self.SIZE:
            raise InputError(f"content key refused: it must be exactly {self.SIZE} bytes")
        self._key = key

    @classmethod
    def generate(cls) -> ContentKey:
        """A fresh random key."""
        return cls(random_bytes(cls.SIZE))

    def encrypt(self, plaintext: bytes, ad: bytes, *, nonce: bytes | None = None) -> bytes:
        """``nonce || ciphertext+tag`` of ``plaintext`` bound to associated data ``ad``."""
        if nonce is None:
            nonce = random_bytes(self.NONCE_SIZE)
        elif len(nonce) != self.NONCE_SIZE:
            raise InputError(f"nonce refused: it must be exactly {self.NONCE_SIZE} bytes")
        sealed = nacl.bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(
            bytes(plaintext), bytes(ad), bytes(nonce), self._key
        )
        return bytes(nonce) + sealed

    def decrypt(self, blob: bytes, ad: bytes) -> bytes:
        """The plaintext of ``blob``; :class:`DecryptionError` if anything is wrong."""
        if len(blob) < self.NONCE_SIZE + self.TAG_SIZE:
            raise DecryptionError(
                f"ciphertext refused: {len(blob)} bytes is shorter than nonce + tag "
                f"({self.NONCE_SIZE + self.TAG_SIZE} bytes)"
            )
        nonce, sealed = bytes(blob[: self.NONCE_SIZE]), bytes(blob[self.NONCE_SIZE :])
        try:
            return nacl.bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(
                sealed, bytes(ad), nonce, self._key
            )
        except (nacl.exceptions.CryptoError, ValueError, TypeError) as exc:
            raise DecryptionError(
                f"ciphertext refused under content key {self.key_id()}: tampered data, "
                "wrong associated data or wrong key"
            ) from exc

    def wrap_to(self, box_public: bytes) -> bytes:
        """This key sealed (SealedBox) to a member's X25519 public key."""
        if not isinstance(box_public, bytes) or len(box_public) != BOX_PUBLIC_SIZE:
            raise InputError(f"box public key refused: it must be exactly {BOX_PUBLIC_SIZE} bytes")
        return nacl.public.SealedBox(nacl.public.PublicKey(box_public)).encrypt(self._key)

    @classmethod
    def unwrap(cls, wrapped: bytes, member: MemberKey) -> ContentKey:
        """Open a key wrapped to ``member``; :class:`DecryptionError` if it is not theirs."""
        key = member._open_sealed(wrapped)
        if len(key) != cls.SIZE:
            raise DecryptionError(
                f"wrapped key refused: it holds {len(key)} bytes, a content key is {cls.SIZE}"
            )
        return cls(key)

    def key_id(self) -> str:
        """A short id derived from the key by BLAKE2b; safe to show and log."""
        return b32(blake2b(self._key, size=10, person=_KEY_ID_PERSON))

    def commitment(self) -> str:
        """The keyring's public commitment to this key: hex BLAKE2b-256, own domain.

        ``key_id`` (80 bits) names a key in messages; a keyring update must not be
        able to swap the key behind an equal commitment, so this one is 256 bits.
        """
        return blake2b(self._key, size=32, person=_COMMIT_PERSON).hex()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ContentKey):
            return NotImplemented
        return equal(self._key, other._key)

    def __hash__(self) -> int:
        return hash((ContentKey, self.key_id()))

    def __repr__(self) -> str:
        return f"ContentKey(key_id={self.key_id()!r})"
