"""Member keys (DESIGN §4): an Ed25519 signing key and a separate X25519 box key.

A :class:`MemberKey` holds secrets and never shows them: ``repr`` names the
kid only, and the seeds leave the object only through a key file or a
passphrase-sealed bundle.  Its :class:`PublicIdentity` is what the roster
publishes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nacl.bindings
import nacl.exceptions
import nacl.public
import nacl.signing

from ..protocol.errors import DecryptionError, InputError, KeyFileError
from .hashing import b32, blake2b, equal, kid_from_public, random_bytes
from .keyfile import (
    KDF_MODERATE,
    KdfLimits,
    KeyFileContent,
    decode_key_file,
    encode_key_file,
    read_key_file,
    write_private_file,
)
from .signing import domain_message

__all__ = ["BOX_PUBLIC_SIZE", "FINGERPRINT_PERSON", "MemberKey", "PublicIdentity"]

BOX_PUBLIC_SIZE: int = nacl.bindings.crypto_box_PUBLICKEYBYTES
FINGERPRINT_PERSON = b"sealmem-fpr-v1"


def _public_size(name: str, value: bytes, size: int) -> bytes:
    if not isinstance(value, bytes) or len(value) != size:
        got = len(value) if isinstance(value, bytes | bytearray) else type(value).__name__
        raise InputError(f"{name} refused: it must be exactly {size} bytes, got {got}")
    return value


@dataclass(frozen=True, slots=True)
class PublicIdentity:
    """The public half of a member key: what a roster lists and others verify against."""

    kid: str
    sign_public: bytes
    box_public: bytes

    def __post_init__(self) -> None:
        _public_size("signing public key", self.sign_public, 32)
        _public_size("box public key", self.box_public, BOX_PUBLIC_SIZE)
        expected = kid_from_public(self.sign_public)
        if self.kid != expected:
            raise InputError(
                f"member id {self.kid!r} refused: the signing key's id is {expected!r} "
                "(kid = base32 of BLAKE2b of the signing public key)"
            )

    @classmethod
    def from_public_keys(cls, sign_public: bytes, box_public: bytes) -> PublicIdentity:
        """The identity of two public keys, with the kid computed from ``sign_public``."""
        return cls(kid_from_public(sign_public), sign_public, box_public)

    def fingerprint(self) -> str:
        """Twenty base32 characters in groups of four, for comparing out of band."""
        digest = blake2b(self.sign_public + self.box_public, size=32, person=FINGERPRINT_PERSON)
        text = b32(digest)[:20]
        return "-".join(text[i : i + 4] for i in range(0, 20, 4))


class MemberKey:
    """A member's secret keys: Ed25519 for signing, X25519 for receiving wrapped keys."""

    SEED_SIZE = 32

    __slots__ = ("_box_private", "_box_seed", "_sign_seed", "_signing", "box_public", "kid",
                 "sign_public")  # fmt: skip

    def __init__(self, sign_seed: bytes, box_seed: bytes) -> None:
        for name, seed in (("signing seed", sign_seed), ("box seed", box_seed)):
            if not isinstance(seed, bytes) or len(seed) != self.SEED_SIZE:
                raise InputError(f"{name} refused: it must be exactly {self.SEED_SIZE} bytes")
        self._sign_seed = sign_seed
        self._box_seed = box_seed
        self._signing = nacl.signing.SigningKey(sign_seed)
        self._box_private = nacl.public.PrivateKey.from_seed(box_seed)
        self.sign_public: bytes = bytes(self._signing.verify_key)
        self.box_public: bytes = bytes(self._box_private.public_key)
        self.kid: str = kid_from_public(self.sign_public)

    @classmethod
    def generate(cls) -> MemberKey:
        """A fresh key from the system CSPRNG."""
        return cls(random_bytes(cls.SEED_SIZE), random_bytes(cls.SEED_SIZE))

    def sign(self, context: str, message: bytes) -> bytes:
        """A 64-byte Ed25519 signature over ``domain_message(context, message)``."""
        return self._signing.sign(domain_message(context, message)).signature

    def public(self) -> PublicIdentity:
        return PublicIdentity(self.kid, self.sign_public, self.box_public)

    def _open_sealed(self, sealed: bytes) -> bytes:
        """Open a SealedBox addressed to this member (crypto-internal)."""
        try:
            return nacl.public.SealedBox(self._box_private).decrypt(bytes(sealed))
        except (nacl.exceptions.CryptoError, ValueError, TypeError) as exc:
            raise DecryptionError(
                f"sealed box refused by member {self.kid}: it was not addressed to this key "
                "or was altered"
            ) from exc

    def _content(self) -> KeyFileContent:
        return KeyFileContent(
            self.kid, self.sign_public, self.box_public, self._sign_seed, self._box_seed
        )

    @classmethod
    def _from_content(cls, content: KeyFileContent, where: str) -> MemberKey:
        key = cls(content.sign_seed, content.box_seed)
        if (
            key.kid != content.kid
            or key.sign_public != content.sign_public
            or key.box_public != content.box_public
        ):
            raise KeyFileError(
                f"{where} is corrupt: its public keys or kid do not match its secret seeds"
            )
        return key

    def save(
        self, path: Path, *, passphrase: str | None = None, kdf: KdfLimits = KDF_MODERATE
    ) -> None:
        """Write this key to ``path`` (mode 0600, atomic), sealed if ``passphrase`` is given."""
        data = encode_key_file(self._content(), passphrase=passphrase, kdf=kdf)
        write_private_file(Path(path), data)

    @classmethod
    def load(cls, path: Path, *, passphrase: str | None = None) -> MemberKey:
        """Read a key file written by :meth:`save`; raises :class:`KeyFileError`."""
        path = Path(path)
        where = f"key file {path}"
        content = decode_key_file(read_key_file(path), passphrase=passphrase, where=where)
        return cls._from_content(content, where)

    def export_bundle(self, passphrase: str, *, kdf: KdfLimits = KDF_MODERATE) -> bytes:
        """This key as passphrase-sealed bytes, to hand over out of band (``admin issue``)."""
        return encode_key_file(self._content(), passphrase=passphrase, kdf=kdf)

    @classmethod
    def import_bundle(cls, data: bytes, passphrase: str) -> MemberKey:
        """Open a bundle made by :meth:`export_bundle`; raises :class:`KeyFileError`."""
        content = decode_key_file(bytes(data), passphrase=passphrase, where="key bundle")
        return cls._from_content(content, "key bundle")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemberKey):
            return NotImplemented
        return equal(self._sign_seed + self._box_seed, other._sign_seed + other._box_seed)

    def __hash__(self) -> int:
        return hash((MemberKey, self.kid, self.box_public))

    def __repr__(self) -> str:
        return f"MemberKey(kid={self.kid!r})"
