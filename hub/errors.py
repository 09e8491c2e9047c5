"""What the hub answers when it refuses a request.

Every refusal is an HTTP status plus a JSON body ``{"error": code, "detail":
sentence}``; the code is short and stable (clients branch on it), the detail
says what was refused, why, and what to do.  Codes (SPEC.md, "Hub API"):

- 400 ``bad-request``; 401 ``unsigned``, ``bad-auth-header``, ``stale-time``,
  ``replayed``, ``bad-signature``, ``unknown-key``, ``bad-operator-token``;
- 403 ``wrong-team``, ``revoked``, ``no-grant``, ``not-admin``, ``not-your-slot``,
  ``registration-closed``, ``not-a-member``;
- 404 ``unknown-team``, ``not-found``; 409 ``exists``, ``stale-seq``,
  ``roster-unknown`` and the chain reasons (``rollback``, ``fork``, ...);
- 413 ``too-large``; 422 a protocol reason (``bad-signature``, ``malformed``,
  ``bad-chunk-id``, ``missing-chunk``, ...); 429 ``rate-limited``;
  507 ``quota-exceeded``.
"""

from __future__ import annotations

from ..protocol import reasons
from ..protocol.errors import Rejected, SealmemError

__all__ = ["Refusal", "from_rejected"]


class Refusal(SealmemError):
    """The hub refuses a request: ``status``, a short ``code`` and a ``detail`` sentence."""

    def __init__(
        self, status: int, code: str, detail: str, *, retry_after: int | None = None
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.retry_after = retry_after

    def body(self) -> dict[str, str]:
        return {"error": self.code, "detail": self.detail}


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
        status = 409
    elif exc.reason == reasons.TOO_LARGE:
        status = 413
    else:
        status = 422
    return Refusal(status, exc.reason, f"{what} refused: {exc.detail}")
