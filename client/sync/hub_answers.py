"""Reading the hub's answers: refusals, JSON bodies, the hub's clock, retry waits.

The hub answers refusals as ``{"error": code, "detail": sentence}``.  The hub is not
trusted with anyone's words: its ``detail`` is for its operator's logs and curl, never
prose the client repeats.  :func:`error` makes a :class:`HubError` (a
:class:`~sealmem.protocol.errors.TransportError`) whose message is the client's own
wording of the code (:data:`WORDING`, the one table; an unknown code is shown as the
code, bounded, or not at all when it is not shaped like one), so that whatever repeats
the message (sync warnings, the last-sync summary, the MCP ``status`` tool) repeats
only our words.  The hub's sentence is kept beside it as :attr:`HubError.said`, a
bounded, escaped excerpt that only the CLI shows to people (:func:`hub_said`: "the hub
said: ...").  For 409 (a stale ``seq`` or an existing roster version: pull, then
retry) it is a :class:`HubConflictError`, which is also the interface's
:class:`~sealmem.client.sync.transport.ConflictError`.  An answer of the wrong shape
is a ``TransportError`` that says so, never a stray error.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping
from typing import Any

import httpx

from ...protocol import hubapi, reasons
from ...protocol.encoding import HEX_HASH_RE, b64d
from ...protocol.errors import TransportError
from ..textsafe import visible
from .transport import ConflictError

__all__ = [
    "MAX_SAID",
    "WORDING",
    "HubConflictError",
    "HubError",
    "blobs",
    "chunk_ids",
    "error",
    "hub_said",
    "is_ms",
    "json_object",
    "retry_after",
    "shown_code",
    "unreadable",
    "wording",
]

_NO_BODY = "http-error"  # our code for an error answer without a hub error body
_REDIRECT = "redirect"  # our code for a 3xx: a redirect (a proxy's) is never a hub's answer
_MAX_RETRY_WAIT_S = 5.0
#: At most this many characters of the hub's own sentence are shown, to people only.
MAX_SAID = 80
_CODE = re.compile(r"[a-z][a-z0-9-]{0,31}")  # what a code looks like; longer is no code

_ASK_ADMIN = "ask an admin of the team"
_OPERATOR = "tell the hub's operator if it lasts"

#: The client's words for every code the hub answers: what was refused and the fix.
#: Another code is one line here (the hub spells it in :mod:`sealmem.protocol.hubapi`).
WORDING: Mapping[str, str] = {
    hubapi.BAD_REQUEST: "the request was not one this hub reads; upgrade sealmem or the hub",
    hubapi.BAD_METHOD: "the hub does not answer this method here; upgrade sealmem or the hub",
    hubapi.UNSIGNED: "the request carried no signature; upgrade sealmem",
    hubapi.BAD_AUTH_HEADER: "the request's signature headers were malformed; upgrade sealmem",
    hubapi.DIGEST_MISSING: "the request carried no body digest; upgrade sealmem",
    hubapi.DISK_FULL: "the hub's disk is full; tell its operator (reads still work)",
    hubapi.MISSING_CHUNK: (
        "the hub lacks chunks the manifest names (it lost them, or they were never uploaded)"
    ),
    hubapi.DIGEST_MISMATCH: (
        "the body the hub received is not the one this client signed (changed or cut on "
        "the way); sync again"
    ),
    hubapi.STALE_TIME: "the request's time is too far from the hub's clock; check this "
    "machine's clock ('sealmem status' compares it with teammates') and sync again",
    hubapi.REPLAYED: "the hub has seen this request's nonce before; sync again",
    hubapi.BAD_SIGNATURE: "the signature did not verify for this member key",
    hubapi.UNKNOWN_KEY: "the hub does not know this member key (not approved yet, or "
    f"another team's hub); {_ASK_ADMIN}",
    hubapi.BAD_OPERATOR_TOKEN: "the operator token was refused; check "
    "SEALMEM_HUB_OPERATOR_TOKEN with the hub's operator",
    hubapi.WRONG_TEAM: f"the key belongs to another team on this hub; {_ASK_ADMIN}",
    hubapi.REVOKED: f"this member is revoked from the team; {_ASK_ADMIN}",
    hubapi.NO_GRANT: f"this member holds no grant for the project; {_ASK_ADMIN}",
    hubapi.NOT_ADMIN: "only an admin of the team may do this",
    hubapi.NOT_YOUR_SLOT: "a member may write only its own objects",
    hubapi.REGISTRATION_CLOSED: "the hub does not register new teams; ask its operator for "
    "an operator token (SEALMEM_HUB_OPERATOR_TOKEN)",
    hubapi.UNKNOWN_TEAM: "the hub holds no such team (not created yet, or the wrong hub URL)",
    hubapi.NOT_FOUND: "the hub holds no such object",
    hubapi.NO_REQUEST: "the hub holds no join request from this key; join again",
    hubapi.STALE_SEQ: "the hub holds a newer manifest of ours (another device with this "
    "member key, or a restored store); sync again",
    hubapi.ROSTER_UNKNOWN: "the hub does not hold the roster this object cites yet; sync again",
    hubapi.TOO_LARGE: "the object is larger than the hub takes",
    hubapi.BAD_CHUNK_ID: "a chunk's bytes do not hash to its id; sync again",
    hubapi.RATE_LIMITED: "too many requests from this member or address; wait and retry",
    hubapi.TEAM_RATE_LIMITED: "too many join requests reach this team; wait and retry",
    hubapi.SLOW_BODY: "the request body came too slowly; check the network and retry",
    hubapi.INTERNAL: f"the hub failed on this request; retry later, {_OPERATOR}",
    hubapi.STORAGE: f"the hub's storage is unavailable; retry later, {_OPERATOR}",
    hubapi.BUSY: f"the hub is busy; retry later, {_OPERATOR}",
    hubapi.QUOTA_EXCEEDED: "the team's storage quota on the hub is used up; ask the hub's "
    "operator to raise it (hub serve --team-quota-mb); nothing was lost here",
    hubapi.INBOX_FULL: "the team's join inbox on the hub is full; ask an admin to handle the "
    "waiting requests ('sealmem admin approve KID' / 'sealmem admin reject KID')",
    hubapi.INBOX_FULL_FOR_ADDRESS: "this address already has its maximum of waiting join "
    "requests; ask an admin to handle them, or wait until they expire",
    _NO_BODY: "the hub (or a proxy before it) answered with no error code",
    _REDIRECT: "the hub URL answers with a redirect (a proxy sending http:// on to https://?), "
    "so nothing was done: set the hub URL to the address the hub answers at",
}


def shown_code(code: object) -> str:
    """``code`` for a message: as it is when it is shaped like a code, else a placeholder."""
    if isinstance(code, str) and _CODE.fullmatch(code):
        return code
    return "not-a-code"


def wording(code: str) -> str:
    """The client's words for ``code``: the table, a verifier reason, or the code itself."""
    if code in WORDING:
        return WORDING[code]
    if code in reasons.REASONS:
        return f"the hub's check of the object refused it as {code} (SPEC.md, reasons)"
    return f"the hub answered code {shown_code(code)}, which this sealmem has no words for"


def excerpt(text: str, limit: int = MAX_SAID) -> str:
    """At most ``limit`` characters of foreign ``text``, on one line, hidden characters and
    line breaks shown as escapes (``...`` marks a cut)."""
    # a character shows as one or more: past ``limit`` (one more, whose neighbour decides
    # whether a joiner is hidden) nothing is shown, so nothing more is escaped
    head = text[: limit + 1]
    flat = visible(head).replace("\n", "\\n").replace("\t", "\\t")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class HubError(TransportError):
    """The hub refused a request: ``status``, its ``code`` (:func:`shown_code`) and
    ``said``, a bounded, escaped excerpt of the hub's sentence for people only (never
    part of the message)."""

    def __init__(
        self, message: str, *, status: int, code: str, said: str = "",
        listed: frozenset[str] = frozenset(),
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.status = status
        self.code = code
        self.said = said
        self.listed = listed  # a missing-chunk refusal's ids (hubapi.FIELD_MISSING)


class HubConflictError(HubError, ConflictError):
    """409: the hub holds a newer or different object here; pull, then retry.  Its
    ``detail`` (what is there, as the interface has it) is the code: our words only."""

    def __init__(
        self, message: str, *, status: int, code: str, said: str = "",
        listed: frozenset[str] = frozenset(),
    ) -> None:  # fmt: skip
        super().__init__(message, status=status, code=code, said=said, listed=listed)
        self.detail = f"the hub answered {code}"


def error(response: httpx.Response, url: str, what: str, attempts: int = 1) -> HubError:
    """The refusal in ``response`` (a status of 300 or more: a redirect is not followed, the
    request was not done), to the last of ``attempts``."""
    status = response.status_code
    code, said = _REDIRECT if status < 400 else _NO_BODY, ""
    listed: frozenset[str] = frozenset()
    with contextlib.suppress(ValueError):
        doc = _parsed(response) if status >= 400 else None  # a redirect's body is no hub's
        if isinstance(doc, dict) and "error" in doc:
            code = shown_code(doc["error"])
            detail = doc.get("detail")
            said = excerpt(detail) if isinstance(detail, str) else ""
            listed = chunk_ids(doc.get(hubapi.FIELD_MISSING))
    cls = HubConflictError if status == hubapi.CONFLICT_STATUS else HubError
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    return cls(
        f"the hub at {url} refused to {what}{tries}: {wording(code)} ({code}, HTTP {status})",
        status=status,
        code=code,
        said=said,
        listed=listed,
    )


def unreadable(exc: httpx.HTTPError) -> str:
    """Why a request got no answer, in words the hub cannot choose: a broken answer's error
    quotes the bytes the hub sent (``illegal status line: b'...'``), so it is named by its
    kind only; a connection or time-out error is this machine's (its OS's) own."""
    if isinstance(exc, httpx.ProtocolError | httpx.DecodingError):
        return f"the answer was not HTTP this client reads ({type(exc).__name__})"
    return str(exc) or type(exc).__name__


def hub_said(exc: BaseException) -> str | None:
    """For people (the CLI), never agents: ``the hub said: "..."`` of the hub's refusal
    behind ``exc`` (itself, or what it was raised from), None when there is none."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        if isinstance(at, HubError) and at.said:
            return f'the hub said: "{at.said}"'
        at = at.__cause__ or at.__context__
    return None


def chunk_ids(value: object) -> frozenset[str]:
    """A hub's list of chunk ids (a missing-chunk refusal's, the lost ones of a seqs
    answer): the well-formed ones among the first ``MAX_MISSING_LISTED``, else none."""
    if not isinstance(value, list):
        return frozenset()
    return frozenset(
        c for c in value[: hubapi.MAX_MISSING_LISTED]
        if isinstance(c, str) and HEX_HASH_RE.fullmatch(c)
    )  # fmt: skip


def _parsed(response: httpx.Response) -> object:
    """The body as JSON; ``ValueError`` when it is not JSON, or nested too deeply to parse
    (the decoder's ``RecursionError``)."""
    try:
        return response.json()
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def json_object(response: httpx.Response, url: str, what: str) -> dict[str, Any]:
    try:
        doc = _parsed(response)
    except ValueError as exc:
        raise TransportError(f"the hub at {url} answered {what} with bad JSON") from exc
    if not isinstance(doc, dict):
        raise TransportError(f"the hub at {url} answered {what} with a non-object")
    return doc


def blobs(value: object, url: str, what: str) -> list[bytes]:
    """A JSON list of base64 objects."""
    if not isinstance(value, list):
        raise TransportError(f"the hub at {url} answered {what} without a list")
    try:
        return [b64d(v) for v in value]
    except ValueError as exc:
        raise TransportError(f"the hub at {url} sent bad base64 for {what}") from exc


def is_ms(text: str) -> bool:
    """True for a plain ASCII millisecond count (``"²".isdigit()`` is true, ``int`` refuses it)."""
    return text.isascii() and text.isdigit() and len(text) <= 18


def retry_after(response: httpx.Response) -> float:
    """The wait a 429 asks for, bounded."""
    raw = response.headers.get(hubapi.HEADER_RETRY_AFTER, "1")
    try:
        wait = float(raw)
    except ValueError:
        return 1.0
    if not math.isfinite(wait):  # time.sleep(nan) raises
        return 1.0
    return min(max(wait, 0.05), _MAX_RETRY_WAIT_S)
