"""Byte encodings and strict field readers shared by the signed objects.

Base64url and object hashes: SPEC.md "Conventions" and "Object hashes".  Decoding is
strict, so one byte string has exactly one text form.  The ``need_*`` readers raise
:class:`~sealmem.protocol.errors.Rejected` (``malformed``) naming the JSON path.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from . import canonical
from .errors import Rejected
from .suite import Suite

__all__ = [
    "HEX_HASH_RE",
    "INVITE_ID_RE",
    "KID_RE",
    "b64d",
    "b64e",
    "exact_keys",
    "need_b64",
    "need_bool",
    "need_dict",
    "need_int",
    "need_kid",
    "need_list",
    "need_str",
    "object_hash",
]

KID_RE = re.compile(r"[a-z2-7]{26}")
HEX_HASH_RE = re.compile(r"[0-9a-f]{64}")
INVITE_ID_RE = re.compile(r"[A-Za-z0-9_-]{22}")
_B64_RE = re.compile(r"[A-Za-z0-9_-]*")


def b64e(data: bytes) -> str:
    """base64url of ``data`` without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64d(text: str) -> bytes:
    """Decode unpadded base64url strictly; raise ``ValueError`` for any other spelling."""
    if not isinstance(text, str) or _B64_RE.fullmatch(text) is None or len(text) % 4 == 1:
        raise ValueError("not unpadded base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not unpadded base64url") from exc
    if b64e(data) != text:
        raise ValueError("base64url with non-zero trailing bits")
    return data


def object_hash(suite: Suite, kind: str, body: Mapping[str, Any]) -> str:
    """Hex BLAKE2b-256 of ``b"sealmem/v1/hash/" + kind + b"\\x00" + canonical(body)``."""
    message = b"sealmem/v1/hash/" + kind.encode("ascii") + b"\x00" + canonical.encode(body)
    return suite.blake2b(message, size=32).hex()


def _malformed(path: str, what: str) -> Rejected:
    return Rejected("malformed", f"{path} {what}")


def need_dict(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _malformed(path, "must be a JSON object")
    return value


def exact_keys(value: object, keys: frozenset[str] | set[str], path: str) -> dict[str, Any]:
    """``value`` as an object holding exactly ``keys`` (no missing, no unknown)."""
    obj = need_dict(value, path)
    if obj.keys() != keys:
        missing = sorted(keys - obj.keys())
        unknown = sorted(obj.keys() - keys)
        raise _malformed(path, f"has missing fields {missing} and unknown fields {unknown}")
    return obj


def need_list(value: object, path: str, *, max_len: int) -> list[Any]:
    if not isinstance(value, list):
        raise _malformed(path, "must be a JSON list")
    if len(value) > max_len:
        raise Rejected("too-large", f"{path} holds {len(value)} items; the limit is {max_len}")
    return value


def need_str(value: object, path: str, *, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(value, str):
        raise _malformed(path, "must be a string")
    if pattern is not None and pattern.fullmatch(value) is None:
        raise _malformed(path, f"value {value[:80]!r} must match {pattern.pattern}")
    return value


def need_int(value: object, path: str, *, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _malformed(path, "must be an integer")
    if value < minimum:
        raise _malformed(path, f"is {value}; it must be at least {minimum}")
    return value


def need_bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise _malformed(path, "must be true or false")
    return value


def need_kid(value: object, path: str) -> str:
    return need_str(value, path, pattern=KID_RE)


def need_b64(value: object, path: str, *, size: int | None = None) -> bytes:
    text = need_str(value, path)
    try:
        data = b64d(text)
    except ValueError as exc:
        raise _malformed(path, "must be unpadded base64url") from exc
    if size is not None and len(data) != size:
        raise _malformed(path, f"decodes to {len(data)} bytes; it must be {size}")
    return data
