"""Signed hub requests (DESIGN §6): a member key signs each HTTP request.

The message and its headers: SPEC.md "Hub API", "Request signature".  The hub checks
the time against a replay window and remembers nonces inside it, so a captured request
cannot be replayed; it needs only the member's public key, so it stores no shared
secret.  The body digest the signature covers travels in its own header: the hub
verifies the signature from the headers alone, before it reads a body byte, then
checks that the body hashes to that digest (:func:`body_matches`).
"""

from __future__ import annotations

from ..protocol import canonical
from ..protocol.encoding import b64e
from ..protocol.hubapi import (
    HEADER_DIGEST,
    HEADER_KID,
    HEADER_NONCE,
    HEADER_SIGNATURE,
    HEADER_TIME,
)
from .hashing import blake2b, random_bytes
from .keys import MemberKey
from .signing import verify

__all__ = [
    "NONCE_SIZE",
    "REQUEST_CONTEXT",
    "body_digest",
    "body_matches",
    "request_message",
    "sign_request",
    "verify_request",
]

REQUEST_CONTEXT = "request"
NONCE_SIZE = 16


def body_digest(body: bytes) -> str:
    """Hex BLAKE2b-256 of a request body (empty bodies included)."""
    return blake2b(body, size=32).hex()


def body_matches(digest: str, body: bytes) -> bool:
    """Whether ``body`` hashes to ``digest`` (the ``Sealmem-Digest`` header, signed)."""
    return body_digest(body) == digest


def request_message(
    method: str, target: str, digest: str, time_ms: int, nonce: str, kid: str
) -> bytes:
    """The canonical bytes a request signature covers (before domain separation)."""
    return canonical.encode(
        {
            "method": method.upper(),
            "target": target,
            "body": digest,
            "time": time_ms,
            "nonce": nonce,
            "kid": kid,
        }
    )


def sign_request(
    key: MemberKey,
    method: str,
    target: str,
    body: bytes,
    *,
    now_ms: int,
    nonce: bytes | None = None,
) -> dict[str, str]:
    """The signature headers for one request (``target`` = raw path plus query), the
    body digest they sign among them."""
    nonce_text = b64e(random_bytes(NONCE_SIZE) if nonce is None else nonce)
    digest = body_digest(body)
    message = request_message(method, target, digest, now_ms, nonce_text, key.kid)
    return {
        HEADER_KID: key.kid,
        HEADER_TIME: str(now_ms),
        HEADER_NONCE: nonce_text,
        HEADER_SIGNATURE: b64e(key.sign(REQUEST_CONTEXT, message)),
        HEADER_DIGEST: digest,
    }


def verify_request(
    sign_public: bytes,
    method: str,
    target: str,
    digest: str,
    time_ms: int,
    nonce: str,
    kid: str,
    signature: bytes,
) -> None:
    """Raise ``BadSignatureError`` unless ``signature`` covers this request."""
    message = request_message(method, target, digest, time_ms, nonce, kid)
    verify(sign_public, REQUEST_CONTEXT, message, signature)
