"""The signed envelope every published object travels in (SPEC.md "The signed envelope").

The context is not on the wire: the reader decides what kind of object it expects,
and a signature made for another context does not verify (reported as
``wrong-context`` when it verifies under another one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import canonical, reasons
from .encoding import b64e, exact_keys, need_b64, need_dict, need_kid
from .errors import BadSignatureError, Rejected
from .suite import Signer, Suite

__all__ = ["CONTEXTS", "SIGNATURE_SIZE", "Envelope", "seal", "unpack"]

CONTEXTS: tuple[str, ...] = (
    "roster", "keyring", "manifest", "reset", "join", "invite", "request", "checkpoint",
    "device-invite", "device-join", "member-keyring", "private-trust",
)  # fmt: skip
SIGNATURE_SIZE = 64
_KEYS = frozenset({"body", "signer", "sig"})


def seal(body: dict[str, Any], context: str, signer: Signer) -> bytes:
    """Sign ``body`` for ``context`` and return the envelope's wire bytes."""
    sig = signer.sign(context, canonical.encode(body))
    return canonical.encode({"body": body, "signer": signer.kid, "sig": b64e(sig)})


@dataclass(frozen=True, slots=True)
class Envelope:
    """A parsed (not yet verified) envelope."""

    body: dict[str, Any]
    signer: str
    sig: bytes

    def check(self, suite: Suite, context: str, sign_public: bytes) -> None:
        """Verify the signature for ``context``; raise ``Rejected`` naming why not."""
        message = canonical.encode(self.body)
        try:
            suite.verify(sign_public, context, message, self.sig)
        except BadSignatureError:
            for other in CONTEXTS:
                if other == context:
                    continue
                try:
                    suite.verify(sign_public, other, message, self.sig)
                except BadSignatureError:
                    continue
                raise Rejected(
                    reasons.WRONG_CONTEXT,
                    f"expected a {context} but the signature by {self.signer} "
                    f"was made for a {other}",
                ) from None
            raise Rejected(
                reasons.BAD_SIGNATURE,
                f"the {context} signature by {self.signer} does not verify "
                "(the object was altered or signed by another key)",
            ) from None


def unpack(data: bytes, *, what: str, max_bytes: int) -> Envelope:
    """Parse envelope bytes: size limit, canonical form, field shapes."""
    if len(data) > max_bytes:
        raise Rejected(reasons.TOO_LARGE, f"{what} is {len(data)} bytes; the limit is {max_bytes}")
    try:
        value = canonical.decode(data)
    except canonical.NonCanonical as exc:
        raise Rejected(reasons.NOT_CANONICAL, f"{what} envelope: {exc}") from exc
    obj = exact_keys(value, _KEYS, f"{what} envelope")
    return Envelope(
        body=need_dict(obj["body"], f"{what}.body"),
        signer=need_kid(obj["signer"], f"{what}.signer"),
        sig=need_b64(obj["sig"], f"{what}.sig", size=SIGNATURE_SIZE),
    )
