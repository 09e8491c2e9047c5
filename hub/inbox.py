"""The join-request inbox: unauthenticated posts, checked for shape and self-signature.

A join request (``sealmem/join/v1``, context ``join``) is signed by the key it
introduces.  The hub checks that it is well formed, for this team, and
self-signed by the member id it is filed under; it cannot tell a real
teammate from a stranger (the admin compares fingerprints out of band).
"""

from __future__ import annotations

from ..crypto import SUITE
from ..protocol import reasons
from ..protocol.encoding import need_b64, need_kid, need_str
from ..protocol.envelope import unpack
from ..protocol.errors import Rejected

__all__ = ["JOIN_FORMAT", "MAX_JOIN_BYTES", "join_request_key"]

JOIN_FORMAT = "sealmem/join/v1"
MAX_JOIN_BYTES = 16 * 1024


def join_request_key(team: str, kid: str, data: bytes) -> bytes:
    """The signing key a join request introduces; ``Rejected`` if it is not valid."""
    env = unpack(data, what="join request", max_bytes=MAX_JOIN_BYTES)
    body = env.body
    if body.get("format") != JOIN_FORMAT:
        raise Rejected(reasons.UNKNOWN_FORMAT, f"join request format {body.get('format')!r}")
    if need_str(body.get("team"), "join.team") != team:
        raise Rejected(reasons.CROSS_TEAM, f"the join request is for team {body.get('team')!r}")
    body_kid = need_kid(body.get("kid"), "join.kid")
    sign_public = need_b64(body.get("sign_public"), "join.sign_public", size=32)
    if not (body_kid == kid == env.signer == SUITE.kid_from_public(sign_public)):
        raise Rejected(
            reasons.SIGNER_MISMATCH,
            f"the join request filed as {kid} is for {body_kid}, signed by {env.signer}",
        )
    env.check(SUITE, "join", sign_public)
    return sign_public
