"""The nacl-backed implementation of the primitives ``sealmem.protocol`` asks for.

``protocol/`` stays free of nacl by declaring ``typing.Protocol`` interfaces;
:data:`SUITE` is the object the client and hub pass in to satisfy them.
"""

from __future__ import annotations

from . import hashing, padding, signing

__all__ = ["SUITE", "NaclSuite"]


class NaclSuite:
    """Verification, hashing, padding and ids, backed by libsodium."""

    __slots__ = ()

    verify = staticmethod(signing.verify)
    blake2b = staticmethod(hashing.blake2b)
    pad = staticmethod(padding.pad)
    unpad = staticmethod(padding.unpad)
    kid_from_public = staticmethod(hashing.kid_from_public)

    def __repr__(self) -> str:
        return "NaclSuite()"


SUITE = NaclSuite()
