"""Who sent a request: signature headers, replay window, nonce cache, caller lookup.

A request is signed by a member key over (method, target, body digest, time,
nonce, kid) in context ``request`` (:mod:`sealmem.crypto.request`); the digest
travels in its own header, so everything is checked from the headers alone,
before a body byte is read.  The hub checks, in order: the five headers are
there and well formed (``unsigned``, ``digest-missing``, ``bad-auth-header``),
the time is within the replay window (``stale-time``), the key is known (the
team's trusted roster, or a live pending join request where the route allows
it: roster v1 and the request's own state; else ``unknown-key``, or
``wrong-team`` for a key of another team whose signature verifies), the
signature verifies, the nonce was not seen inside the window (``replayed``), the
member is not revoked (``revoked``, where the route does not allow it).  Then,
once the body is read, it must hash to the signed digest (``digest-mismatch``).
All of these are 401 except ``wrong-team`` and ``revoked`` (403) and
``digest-mismatch`` (400).  Only public keys are involved: nothing secret is
stored.

A signature that does not verify under the key the team holds is answered as
an unknown key (401 ``unknown-key``, the same sentence, and as promptly: both
before the body): the answer does not tell a stranger whether a kid it names is
in the team, and a claim nobody proved never holds a body reader of the member
it names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..crypto.request import body_matches, verify_request
from ..protocol import hubapi
from ..protocol.encoding import HEX_HASH_RE, KID_RE, b64d
from ..protocol.errors import BadSignatureError, Rejected
from ..protocol.hubapi import parse_number
from ..protocol.roster import Roster
from ..protocol.state import TrustedState
from .errors import Refusal
from .inbox import join_request_key
from .storage import DiskFull, Storage

__all__ = [
    "Authenticator",
    "Caller",
    "Proven",
    "ReplayGuard",
    "Signed",
    "check_body",
    "read_signature",
    "revoked",
]

#: teams whose members' keys are kept looked up (past it, the lookups start again)
_MAX_ROSTERS = 1024


@dataclass(frozen=True, slots=True)
class Signed:
    kid: str
    time_ms: int
    nonce: str
    signature: bytes
    #: the body digest the signature covers (``Sealmem-Digest``), checked against the body
    digest: str


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated requester: a roster member (maybe admin/revoked) or a pending joiner."""

    kid: str
    admin: bool = False
    revoked: bool = False
    pending: bool = False


@dataclass(frozen=True, slots=True)
class Proven:
    """A request whose signature verified from its headers alone (before its body): the
    headers, the key they verified under and who holds it."""

    signed: Signed
    key: bytes
    caller: Caller


def read_signature(headers: Mapping[str, str]) -> Signed:
    """The signature headers, or a 401 refusal naming what is missing or malformed."""
    names = (hubapi.HEADER_KID, hubapi.HEADER_TIME, hubapi.HEADER_NONCE, hubapi.HEADER_SIGNATURE)
    values = [headers.get(n) for n in names]
    digest = headers.get(hubapi.HEADER_DIGEST)
    if all(v is None for v in values) and digest is None:
        raise Refusal(
            401, hubapi.UNSIGNED, "this request carries no member signature; use a sealmem client"
        )
    kid, time_text, nonce, sig_text = values
    if kid is None or time_text is None or nonce is None or sig_text is None:
        missing = [n for n, v in zip(names, values, strict=True) if v is None]
        raise Refusal(401, hubapi.BAD_AUTH_HEADER, f"signature headers {missing} are missing")
    if digest is None:
        raise Refusal(
            401,
            hubapi.DIGEST_MISSING,
            f"the request has no {hubapi.HEADER_DIGEST} header (the signed body digest this "
            "hub checks before it reads a body): upgrade sealmem on this machine",
        )
    if HEX_HASH_RE.fullmatch(digest) is None:
        raise Refusal(
            401, hubapi.BAD_AUTH_HEADER, "the body digest header is not 64 lowercase hex digits"
        )
    try:
        signature = b64d(sig_text)
        nonce_bytes = b64d(nonce)
        time_ms = parse_number(time_text, "time")
    except ValueError:
        raise Refusal(
            401, hubapi.BAD_AUTH_HEADER, "the signature, nonce or time header is malformed"
        ) from None
    if KID_RE.fullmatch(kid) is None or len(signature) != 64 or not 16 <= len(nonce_bytes) <= 64:
        raise Refusal(
            401, hubapi.BAD_AUTH_HEADER, "the member id, nonce or signature has a bad size"
        )
    return Signed(kid, time_ms, nonce, signature, digest)


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

    def remember(self, kid: str, nonce: str, now_ms: int, *, read: bool = False) -> None:
        """Record the nonce, or refuse a replay.  When the storage has no space to record
        it, a ``read`` (a GET: it changes nothing stored) whose nonce is not recorded passes
        unrecorded, and any other request is refused ``disk-full`` (SPEC: threat model)."""
        # a request accepted now may still be in the window 2 windows later, that
        # millisecond included; the nonce expires (is forgotten) only after it
        expires_ms = now_ms + 2 * self.window_ms + 1
        try:
            fresh = self._storage.remember_nonce(kid, nonce, expires_ms, now_ms)
        except DiskFull:
            if not read:
                raise
            fresh = not self._storage.nonce_seen(kid, nonce, now_ms)
        if not fresh:
            raise Refusal(
                401, hubapi.REPLAYED, "this request was already received (same nonce); refused"
            )


class Authenticator:
    """Resolve the caller of a signed request against a team's trusted state.

    In two steps, so that a body is read only for a request the hub has proven:
    :meth:`prove` checks the headers alone (well formed, in the window, a key this
    team holds, the signature over the digest header, the nonce); :meth:`caller`
    then checks that the body hashes to that digest, and says who called in the
    team's state as it is after the body.
    """

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
        # per team: the roster object last seen and the members looked up in it (key,
        # caller); a new trusted state brings a new roster object, which starts afresh
        self._members: dict[str, tuple[Roster, dict[str, tuple[bytes, Caller]]]] = {}

    def verify(
        self,
        signed: Signed,
        sign_public: bytes,
        method: str,
        target: str,
        *,
        refusal: Refusal | None = None,
    ) -> None:
        """Signature (over the digest header), then the nonce (only a valid request may
        burn a nonce)."""
        if not _verifies(signed, sign_public, method, target):
            raise refusal or Refusal(
                401,
                hubapi.BAD_SIGNATURE,
                f"the request signature does not verify for member {signed.kid} "
                "(altered in transit, or signed with another key)",
            )
        self._guard.remember(signed.kid, signed.nonce, self._clock(), read=method == "GET")

    def signed(self, headers: Mapping[str, str]) -> Signed:
        signed = read_signature(headers)
        self._guard.check_time(signed.time_ms, self._clock())
        return signed

    def _team_key(
        self, team: str, state: TrustedState, kid: str, allow_pending: bool
    ) -> tuple[bytes, Caller] | None:
        """The key ``team`` holds for ``kid`` and who that is, before any signature check."""
        roster = state.roster
        if roster is not None:
            found = self._member(team, roster, kid)
            if found is not None:
                return found
        if allow_pending:
            live_after = (
                None if self._request_ttl_ms is None else self._clock() - self._request_ttl_ms
            )
            request = self._storage.request(team, kid, live_after)
            if request is not None:
                try:
                    return join_request_key(team, kid, request), Caller(kid, pending=True)
                except Rejected:
                    return None
        return None

    def _member(self, team: str, roster: Roster, kid: str) -> tuple[bytes, Caller] | None:
        """``kid``'s key and role in ``roster``, looked up once per roster (a roster's
        lists are scanned in turn: 200 members, 200 scans a request)."""
        cached = self._members.get(team)
        if cached is None or cached[0] is not roster:
            if len(self._members) >= _MAX_ROSTERS:
                self._members.clear()  # many teams: start again, as after a restart
            cached = self._members[team] = (roster, {})
        found = cached[1].get(kid)
        if found is None:
            member = roster.member(kid)
            if member is None:
                return None  # not kept: a stranger's kids would fill the cache
            revoked = roster.revocation(kid) is not None
            found = (member.sign_public, Caller(kid, admin=roster.is_admin(kid), revoked=revoked))
            cached[1][kid] = found
        return found

    def prove(
        self,
        team: str,
        state: TrustedState,
        method: str,
        target: str,
        headers: Mapping[str, str],
        *,
        allow_pending: bool = False,
        allow_revoked: bool = False,
    ) -> Proven:
        """The request's signature verified from its headers alone, before its body.

        A key the team holds whose signature does not verify gets the same 401
        ``unknown-key`` as a key the team does not hold: a stranger who names a kid
        learns nothing from the answer about that kid's membership."""
        signed = self.signed(headers)
        unknown = _unknown_key(team, signed.kid, allow_pending)
        found = self._team_key(team, state, signed.kid, allow_pending)
        if found is not None:
            key, caller = found
            self.verify(signed, key, method, target, refusal=unknown)
            if caller.revoked and not allow_revoked:
                raise revoked(team, signed.kid)
            return Proven(signed, key, caller)
        for other, key in self._storage.keys_of(signed.kid):
            if other != team and _verifies(signed, key, method, target):
                raise Refusal(
                    403,
                    hubapi.WRONG_TEAM,
                    f"member {signed.kid} belongs to another team, not {team}; "
                    "check the team id in your sealmem config",
                )
        raise unknown

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
        proven: Proven | None = None,
    ) -> Caller:
        """Who sent this request, once ``body`` hashes to the digest its signature covers.

        ``proven``: what :meth:`prove` made of the same ``headers`` before the body
        (not verified again); the time is checked again and the caller looked up
        again in ``state``, read after the body (a revocation meanwhile is honoured)."""
        if proven is None:
            proven = self.prove(
                team, state, method, target, headers,
                allow_pending=allow_pending, allow_revoked=allow_revoked,
            )  # fmt: skip
            caller = proven.caller
        else:
            kid = proven.signed.kid
            self._guard.check_time(proven.signed.time_ms, self._clock())
            found = self._team_key(team, state, kid, allow_pending)
            if found is None or found[0] != proven.key:
                raise _unknown_key(team, kid, allow_pending)
            caller = found[1]
            if caller.revoked and not allow_revoked:
                raise revoked(team, kid)
        check_body(proven.signed, body)
        return caller


def check_body(signed: Signed, body: bytes) -> None:
    """400 ``digest-mismatch`` unless ``body`` hashes to the signed digest header."""
    if not body_matches(signed.digest, body):
        raise Refusal(
            400,
            hubapi.DIGEST_MISMATCH,
            f"the request body ({len(body)} bytes) does not hash to its signed "
            f"{hubapi.HEADER_DIGEST} header (altered in transit?); nothing was stored: "
            "send it again",
        )


def _verifies(signed: Signed, key: bytes, method: str, target: str) -> bool:
    try:
        verify_request(
            key, method, target, signed.digest, signed.time_ms, signed.nonce, signed.kid,
            signed.signature,
        )  # fmt: skip
    except BadSignatureError:
        return False
    return True


def revoked(team: str, kid: str) -> Refusal:
    """The 403 of a request signed by a member the team revoked."""
    return Refusal(403, hubapi.REVOKED, f"member {kid} was revoked from team {team}")


def _unknown_key(team: str, kid: str, allow_pending: bool) -> Refusal:
    pending = " nor its pending join request" if allow_pending else ""
    return Refusal(
        401,
        hubapi.UNKNOWN_KEY,
        f"no key of member {kid} in team {team}'s roster{pending} verifies this request: "
        "if you joined, ask an admin to approve your join request; if you are a member, "
        "the request was altered in transit or signed with another key",
    )
