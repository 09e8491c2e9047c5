"""Reading the hub's answers: refusals, JSON bodies, the hub's clock, retry waits.

The hub answers refusals as ``{"error": code, "detail": sentence}``: :func:`error` makes
a :class:`HubError` (a :class:`~sealmem.protocol.errors.TransportError`) with the hub's
reason, and for 409 (a stale ``seq`` or an existing roster version: pull, then retry) a
:class:`HubConflictError`, which is also the interface's
:class:`~sealmem.client.sync.transport.ConflictError`.  The hub is not trusted: an
answer of the wrong shape is a ``TransportError`` that says so, never a stray error.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import httpx

from ...protocol import hubapi
from ...protocol.encoding import HEX_HASH_RE, b64d
from ...protocol.errors import TransportError
from .transport import ConflictError

__all__ = [
    "HubConflictError",
    "HubError",
    "blobs",
    "chunk_ids",
    "error",
    "is_ms",
    "json_object",
    "retry_after",
]

_NO_BODY = "http-error"  # our code for an error answer without a hub error body
_MAX_RETRY_WAIT_S = 5.0


class HubError(TransportError):
    """The hub refused a request: ``status``, its ``code`` and ``detail``."""

    def __init__(
        self, message: str, *, status: int, code: str, detail: str,
        listed: frozenset[str] = frozenset(),
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.status = status
        self.code = code
        self.detail = detail
        self.listed = listed  # a missing-chunk refusal's ids (hubapi.FIELD_MISSING)


class HubConflictError(HubError, ConflictError):
    """409: the hub holds a newer or different object here; pull, then retry."""


def error(response: httpx.Response, url: str, what: str, attempts: int = 1) -> HubError:
    """The refusal in ``response`` (a status of 400 or more), to the last of ``attempts``."""
    status = response.status_code
    code, detail = _NO_BODY, f"HTTP {status} without an error body"
    listed: frozenset[str] = frozenset()
    with contextlib.suppress(ValueError):
        doc = _parsed(response)
        if isinstance(doc, dict) and "error" in doc:
            code, detail = str(doc["error"]), str(doc.get("detail", detail))
            listed = chunk_ids(doc.get(hubapi.FIELD_MISSING))
    cls = HubConflictError if status == hubapi.CONFLICT_STATUS else HubError
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    return cls(
        f"the hub at {url} refused to {what}{tries}: {detail} ({code}, HTTP {status})",
        status=status,
        code=code,
        detail=detail,
        listed=listed,
    )


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
