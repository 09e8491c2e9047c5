"""Domain-separated Ed25519 signatures (SPEC.md "Domain-separated signatures").

Every signature covers ``domain_message(context, message)``, so that bytes signed for
one purpose (a roster) can never be replayed as another (a manifest).
"""

from __future__ import annotations

import re

import nacl.exceptions
import nacl.signing

from ..protocol.errors import BadSignatureError, InputError

__all__ = [
    "CONTEXT_RE",
    "DOMAIN_PREFIX",
    "domain_message",
    "verify",
]

DOMAIN_PREFIX = b"sealmem/v1/"
CONTEXT_RE = re.compile(r"[a-z][a-z0-9-]{0,63}")


def domain_message(context: str, message: bytes) -> bytes:
    """The exact bytes that a signature for ``context`` covers."""
    if not isinstance(context, str) or CONTEXT_RE.fullmatch(context) is None:
        raise InputError(
            f"signature context {context!r} refused: it must match ^[a-z][a-z0-9-]*$ "
            "and be at most 64 characters (e.g. 'roster', 'manifest')"
        )
    return DOMAIN_PREFIX + context.encode("ascii") + b"\x00" + bytes(message)


def verify(sign_public: bytes, context: str, message: bytes, signature: bytes) -> None:
    """Check an Ed25519 ``signature`` by ``sign_public`` over ``message`` in ``context``.

    Raises :class:`BadSignatureError` for a wrong signature, a wrong context,
    or a key or signature of the wrong length (nacl refuses those).
    """
    signed = domain_message(context, message)
    try:
        nacl.signing.VerifyKey(bytes(sign_public)).verify(signed, bytes(signature))
    except (nacl.exceptions.CryptoError, ValueError, TypeError) as exc:
        raise BadSignatureError(
            f"signature for context {context!r} does not verify against the given key "
            "(tampered data, wrong signer or wrong context)"
        ) from exc
