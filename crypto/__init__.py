"""sealmem.crypto: the only code that imports nacl.

Small objects in PyNaCl's manner: :class:`MemberKey` (Ed25519 + X25519) with
its :class:`PublicIdentity`, :class:`ContentKey` (XChaCha20-Poly1305 for one
project epoch), domain-separated :func:`verify`, BLAKE2b, Padmé padding, and
:data:`SUITE`, the object that satisfies ``sealmem.protocol``'s interfaces.
Every failure raises a :class:`~sealmem.protocol.errors.CryptoError` subclass
(or :class:`~sealmem.protocol.errors.InputError` for a malformed argument).
"""

from __future__ import annotations

from ..protocol.errors import BadSignatureError, CryptoError, DecryptionError, KeyFileError
from .aead import ContentKey
from .hashing import blake2b, equal, kid_from_public, random_bytes
from .keyfile import KDF_INTERACTIVE, KDF_MODERATE, KDF_SENSITIVE, KdfLimits
from .keys import MemberKey, PublicIdentity
from .padding import pad, padme, unpad
from .signing import DOMAIN_PREFIX, domain_message, verify
from .suite import SUITE, NaclSuite

__all__ = [
    "DOMAIN_PREFIX",
    "KDF_INTERACTIVE",
    "KDF_MODERATE",
    "KDF_SENSITIVE",
    "SUITE",
    "BadSignatureError",
    "ContentKey",
    "CryptoError",
    "DecryptionError",
    "KdfLimits",
    "KeyFileError",
    "MemberKey",
    "NaclSuite",
    "PublicIdentity",
    "blake2b",
    "domain_message",
    "equal",
    "kid_from_public",
    "pad",
    "padme",
    "random_bytes",
    "unpad",
    "verify",
]
