"""Who sent a request: signature headers, replay window, nonce cache, caller lookup.

A request is signed by a member key over (method, target, body hash, time,
nonce) in context ``request`` (:mod:`sealmem.crypto.request`).  The hub checks,
in order: the four headers are there and well formed (``unsigned``,
``bad-auth-header``), the time is within the replay window (``stale-time``),
the key is known (the team's trusted roster, or a live pending join request
where the route allows it: roster v1 and the request's own state; else
``unknown-key``, or ``wrong-team`` for a key of another team), the signature
verifies (``bad-signature``), the nonce was not seen inside the window
(``replayed``).  All of these are 401 except ``wrong-team`` and ``revoked``
(403).  Only public keys are involved: nothing secret is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..crypto.request import body_digest, verify_request
from ..protocol import hubapi
from ..protocol.encoding import KID_RE, b64d
from ..protocol.errors import BadSignatureError, Rejected
from ..protocol.state import TrustedState
from .errors import Refusal
from .inbox import join_request_key
from .storage import Storage

__all__ = ["Authenticator", "Caller", "ReplayGuard", "Signed", "read_signature"]


@dataclass(frozen=True, slots=True)
class Signed:
    kid: str
    time_ms: int
    nonce: str
    signature: bytes


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated requester: a roster member (maybe admin/revoked) or a pending joiner."""

    kid: str
    admin: bool = False
    revoked: bool = False
    pending: bool = False


def read_signature(headers: Mapping[str, str]) -> Signed:
    """The signature headers, or a 401 refusal naming what is missing or malformed."""
    names = (hubapi.HEADER_KID, hubapi.HEADER_TIME, hubapi.HEADER_NONCE, hubapi.HEADER_SIGNATURE)
    values = [headers.get(n) for n in names]
    if all(v is None for v in values):
        raise Refusal(
            401, hubapi.UNSIGNED, "this request carries no member signature; use a sealmem client"
        )
    kid, time_text, nonce, sig_text = values
    if kid is None or time_text is None or nonce is None or sig_text is None:
        missing = [n for n, v in zip(names, values, strict=True) if v is None]
        raise Refusal(401, hubapi.BAD_AUTH_HEADER, f"signature headers {missing} are missing")
    try:
        signature = b64d(sig_text)
        nonce_bytes = b64d(nonce)
        time_ms = int(time_text)
    except ValueError:
        raise Refusal(
            401, hubapi.BAD_AUTH_HEADER, "the signature, nonce or time header is malformed"
        ) from None
    if KID_RE.fullmatch(kid) is None or len(signature) != 64 or not 16 <= len(nonce_bytes) <= 64:
        raise Refusal(
            401, hubapi.BAD_AUTH_HEADER, "the member id, nonce or signature has a bad size"
        )
    return Signed(kid, time_ms, nonce, signature)


class ReplayGuard:
    """The replay window, and the nonces seen inside it (kept by the storage, so that
    every replica refuses a replay and a restart forgets nothing)."""

    def __init__(self, window_ms: int, storage: Storage) -> None:
        self.window_ms = window_ms
        self._storage = storage

    def check_time(self, time_ms: int, now_ms: int) -> None:
        if abs(now_ms - time_ms) > self.window_ms:
            raise Refusal(
                401,
                hubapi.STALE_TIME,
                f"the request is dated {(time_ms - now_ms) / 1000:+.0f} s from the hub clock; "
                f"the window is ±{self.window_ms // 1000} s: fix this machine's clock",
            )

    def remember(self, kid: str, nonce: str, now_ms: int) -> None:
        if not self._storage.remember_nonce(kid, nonce, now_ms + 2 * self.window_ms, now_ms):
            raise Refusal(
                401, hubapi.REPLAYED, "this request was already received (same nonce); refused"
            )


class Authenticator:
    """Resolve the caller of a signed request against a team's trusted state."""

    def __init__(
        self,
        storage: Storage,
        guard: ReplayGuard,
        clock: Callable[[], int],
        *,
        request_ttl_ms: int | None = None,
    ) -> None:
        self._storage = storage
        self._guard = guard
        self._clock = clock
        self._request_ttl_ms = request_ttl_ms

    def verify(
        self, signed: Signed, sign_public: bytes, method: str, target: str, body: bytes
    ) -> None:
        """Signature, then the nonce (only a valid request may burn a nonce)."""
        try:
            verify_request(
                sign_public, method, target, body_digest(body), signed.time_ms, signed.nonce,
                signed.kid, signed.signature,
            )  # fmt: skip
        except BadSignatureError:
            raise Refusal(
                401,
                hubapi.BAD_SIGNATURE,
                f"the request signature does not verify for member {signed.kid} "
                "(altered in transit, or signed with another key)",
            ) from None
        self._guard.remember(signed.kid, signed.nonce, self._clock())

    def signed(self, headers: Mapping[str, str]) -> Signed:
        signed = read_signature(headers)
        self._guard.check_time(signed.time_ms, self._clock())
        return signed

    def caller(
        self,
        team: str,
        state: TrustedState,
        method: str,
        target: str,
        headers: Mapping[str, str],
        body: bytes,
        *,
        allow_pending: bool = False,
        allow_revoked: bool = False,
    ) -> Caller:
        signed = self.signed(headers)
        roster = state.roster
        member = roster.member(signed.kid) if roster is not None else None
        if member is not None and roster is not None:
            self.verify(signed, member.sign_public, method, target, body)
            revoked = roster.revocation(signed.kid) is not None
            if revoked and not allow_revoked:
                raise Refusal(
                    403, hubapi.REVOKED, f"member {signed.kid} was revoked from team {team}"
                )
            return Caller(signed.kid, admin=roster.is_admin(signed.kid), revoked=revoked)
        if allow_pending:
            live_after = (
                None if self._request_ttl_ms is None else self._clock() - self._request_ttl_ms
            )
            request = self._storage.request(team, signed.kid, live_after)
            if request is not None:
                try:
                    key = join_request_key(team, signed.kid, request)
                except Rejected:
                    key = None
                if key is not None:
                    self.verify(signed, key, method, target, body)
                    return Caller(signed.kid, pending=True)
        for other, key in self._storage.keys_of(signed.kid):
            if other == team:
                continue
            try:
                verify_request(
                    key, method, target, body_digest(body), signed.time_ms, signed.nonce,
                    signed.kid, signed.signature,
                )  # fmt: skip
            except BadSignatureError:
                continue
            raise Refusal(
                403,
                hubapi.WRONG_TEAM,
                f"member {signed.kid} belongs to another team, not {team}; "
                "check the team id in your sealmem config",
            )
        raise Refusal(
            401,
            hubapi.UNKNOWN_KEY,
            f"member {signed.kid} is not in team {team}'s roster"
            + (" and has no pending join request" if allow_pending else "")
            + "; ask an admin to approve your join request",
        )
