"""What the hub answers when it refuses a request.

Every refusal is an HTTP status plus a JSON body ``{"error": code, "detail":
sentence}``; the code is short and stable (clients branch on it and word it
themselves), the detail says what was refused, why, and what to do, for the
operator's logs and curl: a client never repeats it to an agent (SPEC.md, "Hub
API").  The codes are spelled once, in :data:`sealmem.protocol.hubapi.CODES`
(SPEC.md, "Hub API"): a verifier's refusal keeps
its reason as the code, with 403 for grant and admin reasons, 409 for the chain
reasons (``rollback``, ``fork``, ...: pull, then retry), 413 for ``too-large``
and 422 for the rest.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..protocol import hubapi, reasons
from ..protocol.errors import Rejected, SealmemError

__all__ = ["Refusal", "from_rejected"]


class Refusal(SealmemError):
    """The hub refuses a request: ``status``, a short ``code`` and a ``detail`` sentence."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        retry_after: int | None = None,
        fields: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.retry_after = retry_after
        self.fields = dict(fields or {})  # structured fields beside the sentence

    def body(self) -> dict[str, object]:
        return {**self.fields, "error": self.code, "detail": self.detail}


_FORBIDDEN = {reasons.NO_WRITE_GRANT, reasons.REVOKED, reasons.UNKNOWN_WRITER, reasons.NOT_ADMIN}
_CONFLICT = {
    reasons.ROLLBACK,
    reasons.FORK,
    reasons.EQUIVOCATION,
    reasons.ROSTER_NOT_EXTENDING,
    reasons.ROSTER_UNKNOWN,
}


def from_rejected(exc: Rejected, what: str) -> Refusal:
    """Translate a verifier's refusal of ``what`` into the hub's answer."""
    if exc.reason in _FORBIDDEN:
        status = 403
    elif exc.reason in _CONFLICT:
        status = hubapi.CONFLICT_STATUS
    elif exc.reason == reasons.TOO_LARGE:
        status = 413
    else:
        status = 422
    return Refusal(status, exc.reason, f"{what} refused: {exc.detail}")
