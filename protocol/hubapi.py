"""The hub's /v1 API vocabulary, spelled once for the hub and for its clients.

Header names, the ``code`` strings of error bodies, query parameter names and
path templates (in Starlette's syntax, ``{name}`` or ``{name:int}``): the hub
routes on the templates, the client fills them with :func:`path`, and SPEC.md
"Hub API (messages)" lists them.  Codes that are verifier reasons are the same
strings as :mod:`sealmem.protocol.reasons` (a refused object keeps its reason on
the wire).  Pure constants and string work: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from . import reasons
from .canonical import MAX_INT
from .encoding import HEX_HASH_RE, KID_RE
from .errors import InputError
from .manifest import MAX_BUCKETS
from .record import PROJECT_RE
from .roster import TEAM_RE
from .verify import MAX_KEYRING_BYTES, MAX_ROSTER_BYTES

__all__ = [
    "BAD_AUTH_HEADER",
    "BAD_CHUNK_ID",
    "BAD_METHOD",
    "BAD_OPERATOR_TOKEN",
    "BAD_REQUEST",
    "BAD_SIGNATURE",
    "BUSY",
    "CHANGES",
    "CHECKPOINT",
    "CHECKPOINTS",
    "CHUNK",
    "CODES",
    "COLLECT",
    "CONFLICT_STATUS",
    "DIGEST_MISMATCH",
    "DIGEST_MISSING",
    "DISK_FULL",
    "FIELD_LOST",
    "FIELD_MISSING",
    "HEADER_DIGEST",
    "HEADER_HUB_TIME",
    "HEADER_KID",
    "HEADER_NONCE",
    "HEADER_OPERATOR_TOKEN",
    "HEADER_RETRY_AFTER",
    "HEADER_SIGNATURE",
    "HEADER_TIME",
    "HEALTHZ",
    "INBOX_FULL",
    "INBOX_FULL_FOR_ADDRESS",
    "INTERNAL",
    "KEYRING",
    "KEYRINGS",
    "MANIFEST",
    "MANIFESTS",
    "MAX_COLLECT_BYTES",
    "MAX_MISSING_LISTED",
    "MAX_ROSTER_PUBLISH_BYTES",
    "METRICS",
    "MISSING_CHUNK",
    "NOT_ADMIN",
    "NOT_FOUND",
    "NOT_YOUR_SLOT",
    "NO_GRANT",
    "NO_REQUEST",
    "PARAMS",
    "QUERY_AFTER",
    "QUERY_LIMIT",
    "QUERY_SINCE",
    "QUERY_WAIT",
    "QUOTA_EXCEEDED",
    "RATE_LIMITED",
    "REGISTRATION_CLOSED",
    "REPLAYED",
    "REQUEST",
    "REQUESTS",
    "REQUEST_APPROVED",
    "REQUEST_PENDING",
    "REQUEST_REVOKED",
    "REQUEST_STATES",
    "REQUEST_UNKNOWN",
    "REVOKED",
    "ROSTER",
    "ROSTERS",
    "ROSTER_UNKNOWN",
    "SEQS",
    "SLOW_BODY",
    "STALE_SEQ",
    "STALE_TIME",
    "STORAGE",
    "TEAM_RATE_LIMITED",
    "TEMPLATES",
    "TOO_LARGE",
    "UNKNOWN_KEY",
    "UNKNOWN_TEAM",
    "UNSIGNED",
    "VERSION_PREFIX",
    "WRITER_MANIFESTS",
    "WRONG_TEAM",
    "parse_number",
    "path",
    "template_names",
]

# -- headers (HTTP header names are case-insensitive; these are the lowercase forms) --

HEADER_KID = "sealmem-kid"
HEADER_TIME = "sealmem-time"
HEADER_NONCE = "sealmem-nonce"
HEADER_SIGNATURE = "sealmem-signature"
#: The signed body digest (hex BLAKE2b-256), so the hub checks a signature before the body.
HEADER_DIGEST = "sealmem-digest"
#: Registers a team on a hub that is not open to it (``PUT /rosters/1``).
HEADER_OPERATOR_TOKEN = "sealmem-operator-token"  # noqa: S105 - a header name
#: The hub clock (ms) on every answer, so a client can tell skew from a bad signature.
HEADER_HUB_TIME = "sealmem-hub-time"
HEADER_RETRY_AFTER = "retry-after"

# -- error codes: ``{"error": code, "detail": sentence}`` ------------------------------

BAD_REQUEST = "bad-request"  # 400
BAD_METHOD = "bad-method"  # 405
UNSIGNED = "unsigned"  # 401
BAD_AUTH_HEADER = "bad-auth-header"  # 401
STALE_TIME = "stale-time"  # 401
REPLAYED = "replayed"  # 401
#: A signed request without ``Sealmem-Digest`` (a client older than the header).
DIGEST_MISSING = "digest-missing"  # 401
#: The body does not hash to the digest its signature covers (altered in transit).
DIGEST_MISMATCH = "digest-mismatch"  # 400
BAD_SIGNATURE = reasons.BAD_SIGNATURE  # 401 for a request, 422 for an object
UNKNOWN_KEY = "unknown-key"  # 401
BAD_OPERATOR_TOKEN = "bad-operator-token"  # noqa: S105 - 401
WRONG_TEAM = "wrong-team"  # 403
REVOKED = reasons.REVOKED  # 403
NO_GRANT = "no-grant"  # 403
NOT_ADMIN = reasons.NOT_ADMIN  # 403
NOT_YOUR_SLOT = "not-your-slot"  # 403
REGISTRATION_CLOSED = "registration-closed"  # 403
UNKNOWN_TEAM = "unknown-team"  # 404
NOT_FOUND = "not-found"  # 404
#: ``GET /requests/{kid}``: no live join request from that key (expired, rejected, never sent)
NO_REQUEST = "no-request"  # 404
STALE_SEQ = "stale-seq"  # 409
ROSTER_UNKNOWN = reasons.ROSTER_UNKNOWN  # 409
TOO_LARGE = reasons.TOO_LARGE  # 413
BAD_CHUNK_ID = reasons.BAD_CHUNK_ID  # 422
MISSING_CHUNK = reasons.MISSING_CHUNK  # 422, with FIELD_MISSING
RATE_LIMITED = "rate-limited"  # 429: per member, or join posts per client address
#: Join posts to one team, from all addresses together, came too fast.
TEAM_RATE_LIMITED = "team-rate-limited"  # 429
#: The request body came slower than the hub's minimum rate, or stalled.
SLOW_BODY = "slow-body"  # 408
INTERNAL = "internal"  # 500
STORAGE = "storage"  # 503
#: The hub's disk (or its database's, or its bucket's) has no space left: nothing was
#: stored; reads still work, writes wait for its operator to free space.
DISK_FULL = "disk-full"  # 503
#: The hub reads as many request bodies at once as it may: retry after ``Retry-After``.
BUSY = "hub-busy"  # 503
QUOTA_EXCEEDED = "quota-exceeded"  # 507
#: The team's join inbox holds its maximum of pending requests: an admin must handle some.
INBOX_FULL = "inbox-full"  # 507
#: This client address already has its maximum of pending requests for the team.
INBOX_FULL_FOR_ADDRESS = "inbox-full-for-address"  # 507

#: Every code above: what a hub answers in ``error`` (beside verifier reasons it relays,
#: :data:`sealmem.protocol.reasons.REASONS`).  A client words each one itself; the
#: ``detail`` beside it is the hub's sentence for its operator, never repeated to agents.
CODES: frozenset[str] = frozenset({
    BAD_REQUEST, BAD_METHOD, UNSIGNED, BAD_AUTH_HEADER, STALE_TIME, REPLAYED, BAD_SIGNATURE,
    UNKNOWN_KEY, BAD_OPERATOR_TOKEN, WRONG_TEAM, REVOKED, NO_GRANT, NOT_ADMIN, NOT_YOUR_SLOT,
    REGISTRATION_CLOSED, UNKNOWN_TEAM, NOT_FOUND, NO_REQUEST, STALE_SEQ, ROSTER_UNKNOWN,
    TOO_LARGE, BAD_CHUNK_ID, RATE_LIMITED, TEAM_RATE_LIMITED, SLOW_BODY, INTERNAL, STORAGE,
    BUSY, QUOTA_EXCEEDED, INBOX_FULL, INBOX_FULL_FOR_ADDRESS, DIGEST_MISSING, DIGEST_MISMATCH,
    DISK_FULL, MISSING_CHUNK,
})  # fmt: skip

# -- join request states (``GET /requests/{kid}`` answers ``{"status": state}``) --------

REQUEST_PENDING = "pending"  # waiting for an admin
REQUEST_APPROVED = "approved"  # the key is in the team's newest roster: read as a member
REQUEST_REVOKED = "revoked"  # the key is in the roster, revoked
#: Not an answer of the hub (it says 404 ``no-request``): what a client calls that case.
REQUEST_UNKNOWN = "unknown"
REQUEST_STATES = frozenset({REQUEST_PENDING, REQUEST_APPROVED, REQUEST_REVOKED, REQUEST_UNKNOWN})

#: The status of every "the hub holds a newer or different object here" answer:
#: a client reads back what is there, then retries.
CONFLICT_STATUS = 409

# -- query parameters ------------------------------------------------------------------

QUERY_AFTER = "after"  # GET rosters: versions above this one
QUERY_LIMIT = "limit"  # GET one writer's manifests: at most this many
QUERY_SINCE = "since"  # GET changes: after this cursor
QUERY_WAIT = "wait"  # GET changes: long-poll for at most this many seconds

# -- numbers and body sizes ------------------------------------------------------------

_NUMBER = re.compile(r"[0-9]{1,19}")  # ASCII only (``str.isdigit`` and ``int`` take ``٣``)


def parse_number(text: str, what: str) -> int:
    """``text`` as an integer in ``0..MAX_INT`` (the canonical encoding's bound): ASCII
    digits only, at most 19 of them.

    >>> parse_number("42", "seq")
    42
    """
    if _NUMBER.fullmatch(text) is None or int(text) > MAX_INT:
        raise InputError(
            f"{what} {text[:24]!r} must be a number of ASCII digits from 0 to {MAX_INT}"
        )
    return int(text)


def _b64_size(n: int) -> int:
    return 4 * ((n + 2) // 3)


#: ``PUT /rosters/{version}``: a roster (base64) and the keyrings that cite it (base64),
#: in JSON.  One full-size keyring beside a full-size roster, plus the JSON around them.
MAX_ROSTER_PUBLISH_BYTES = _b64_size(MAX_ROSTER_BYTES) + _b64_size(MAX_KEYRING_BYTES) + 64 * 1024
#: ``POST /collect/{writer}``: the chunk ids of one snapshot (at most ``MAX_BUCKETS``), each
#: a 64-digit hex string quoted in a JSON list, and ``grace_ms``.
MAX_COLLECT_BYTES = MAX_BUCKETS * (64 + 4) + 1024
#: The most chunk ids one answer lists in :data:`FIELD_MISSING` or :data:`FIELD_LOST`
#: (ascending; a writer repairs those and learns the rest at its next sync): every
#: bucket of the largest snapshot.
MAX_MISSING_LISTED = MAX_BUCKETS
#: A ``missing-chunk`` refusal of ``PUT .../manifests/{seq}``: the ids the manifest
#: names and the slot does not hold (a JSON list, at most ``MAX_MISSING_LISTED``).
FIELD_MISSING = "missing"
#: ``GET .../seqs`` to a writer of the project: ids its kept manifests name that the
#: hub lost (a failed read or a scrub found the blob gone or damaged; SPEC "Self-repair").
FIELD_LOST = "lost"

# -- paths -----------------------------------------------------------------------------

VERSION_PREFIX = "/v1"
_TEAM = VERSION_PREFIX + "/teams/{team}"
_PROJECT = _TEAM + "/projects/{project}"

ROSTERS = _TEAM + "/rosters"
ROSTER = _TEAM + "/rosters/{version:int}"
CHECKPOINTS = _TEAM + "/checkpoint"
CHECKPOINT = _TEAM + "/checkpoint/{seq:int}"
KEYRINGS = _TEAM + "/keyrings/{project}"
KEYRING = _TEAM + "/keyrings/{project}/{epoch:int}"
CHANGES = _TEAM + "/changes"
REQUESTS = _TEAM + "/requests"
REQUEST = _TEAM + "/requests/{kid}"
SEQS = _PROJECT + "/seqs"
MANIFESTS = _PROJECT + "/manifests"
WRITER_MANIFESTS = _PROJECT + "/manifests/{writer}"
MANIFEST = _PROJECT + "/manifests/{writer}/{seq:int}"
CHUNK = _PROJECT + "/chunks/{writer}/{chunk}"
COLLECT = _PROJECT + "/collect/{writer}"
_PRIVATE = _TEAM + "/private/{member}"  # a member's private space: its devices only
PRIVATE_KEYRINGS = _PRIVATE + "/keyrings"
PRIVATE_KEYRING = _PRIVATE + "/keyrings/{epoch:int}"
PRIVATE_CHAINS = _PRIVATE + "/chains/{writer}"
PRIVATE_MANIFESTS = _PRIVATE + "/chains/{writer}/{project}/manifests"
PRIVATE_MANIFEST = _PRIVATE + "/chains/{writer}/{project}/manifests/{seq:int}"
PRIVATE_CHUNK = _PRIVATE + "/chains/{writer}/{project}/chunks/{chunk}"
PRIVATE_TRUST = _PRIVATE + "/trust/{writer}"
HEALTHZ = "/healthz"
METRICS = "/metrics"

#: Every path the hub answers.
TEMPLATES: tuple[str, ...] = (
    HEALTHZ, METRICS, ROSTERS, ROSTER, KEYRINGS, KEYRING, CHANGES, REQUESTS, REQUEST,
    SEQS, MANIFESTS, WRITER_MANIFESTS, MANIFEST, CHUNK, COLLECT, CHECKPOINTS, CHECKPOINT,
    PRIVATE_KEYRINGS, PRIVATE_KEYRING, PRIVATE_CHAINS, PRIVATE_MANIFESTS, PRIVATE_MANIFEST,
    PRIVATE_CHUNK, PRIVATE_TRUST,
)  # fmt: skip

#: What each text path parameter must match (``:int`` ones are integers >= 0).
PARAMS: Mapping[str, re.Pattern[str]] = {
    "team": TEAM_RE,
    "project": PROJECT_RE,
    "writer": KID_RE,
    "member": KID_RE,
    "kid": KID_RE,
    "chunk": HEX_HASH_RE,
}

_FIELD = re.compile(r"\{([a-z]+)(:int)?\}")


def template_names(template: str) -> dict[str, bool]:
    """The parameters of ``template``, each with whether it is an integer."""
    return {m.group(1): m.group(2) is not None for m in _FIELD.finditer(template)}


def path(template: str, **values: str | int) -> str:
    """``template`` filled with ``values``, each checked so that none can steer the path.

    >>> path(MANIFEST, team="t1abc", project="web", writer="a" * 26, seq=3)
    '/v1/teams/t1abc/projects/web/manifests/aaaaaaaaaaaaaaaaaaaaaaaaaa/3'
    """
    names = template_names(template)
    if set(values) != set(names):
        raise InputError(f"{template} takes {sorted(names)}, not {sorted(values)}")

    def fill(match: re.Match[str]) -> str:
        name, value = match.group(1), values[match.group(1)]
        if names[name]:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InputError(f"{name} {value!r} must be an integer >= 0")
            return str(value)
        pattern = PARAMS[name]
        if not isinstance(value, str) or pattern.fullmatch(value) is None:
            raise InputError(f"{name} {value!r} must match {pattern.pattern}")
        return value

    return _FIELD.sub(fill, template)
