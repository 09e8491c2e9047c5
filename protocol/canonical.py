"""Canonical JSON: the only byte form that is ever signed, hashed or encrypted.

Rules: SPEC.md "Canonical JSON".  A string holding a lone surrogate has no UTF-8 form
and is refused by both directions as :class:`NonCanonical`, never as a UnicodeError.
:func:`decode` accepts exactly the bytes :func:`encode` produces and rejects any other
spelling of the same value, so a signature covers one byte string only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import ProtocolError

try:  # the C-backed codec: same bytes, about 10x faster to encode (tests/bench/bench_push.py)
    import orjson

    _ORJSON = True
except ImportError:  # pragma: no cover - a platform without an orjson wheel: stdlib only
    _ORJSON = False

__all__ = ["MAX_INT", "NonCanonical", "decode", "encode"]

MAX_INT = 2**63 - 1


class NonCanonical(ProtocolError):
    """The bytes are valid JSON but not in canonical form, or hold a forbidden value."""


def _check(value: Any, path: str = "$") -> None:
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        _check_text(value, path)
        return
    if isinstance(value, int):
        if not -MAX_INT - 1 <= value <= MAX_INT:
            raise NonCanonical(f"integer at {path} is outside the signed 64-bit range")
        return
    if isinstance(value, float):
        raise NonCanonical(f"float at {path}: canonical JSON holds integers only")
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check(item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise NonCanonical(f"object key {key!r} at {path} is not a string")
            _check_text(key, f"{path} (an object key)")
            _check(item, path + _key_step(key))
        return
    raise NonCanonical(f"value of type {type(value).__name__} at {path} cannot be encoded")


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]{1,40}")


def _key_step(key: str) -> str:
    """``.key`` for a plain key, else ``['...']`` escaped (a key from outside may hold a
    newline or a terminal control: an error message carries no raw character of it)."""
    return f".{key}" if _PLAIN_KEY.fullmatch(key) else f"[{_short(key)!a}]"


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _check_text(text: str, path: str) -> None:
    for i, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            raise NonCanonical(
                f"string at {path} holds a lone surrogate U+{ord(char):04X} at index {i}: "
                "it has no UTF-8 form, so canonical JSON cannot carry it "
                f"(the string starts {text[:20].encode('utf-8', 'backslashreplace').decode()!r}); "
                "remove or replace it"
            )


def _fast_check(value: Any) -> bool:
    """True when ``value`` holds only plain JSON types and in-range integers.

    An iterative walk over exact types, about five times faster than
    :func:`_check`; anything unusual (a float, a subclass, an out-of-range
    integer) returns False and :func:`_check` then names the offending path.
    """
    stack = [value]
    pop, extend = stack.pop, stack.extend
    low, high = -MAX_INT - 1, MAX_INT
    while stack:
        item = pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        if kind is int:
            if not low <= item <= high:
                return False
        elif kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            extend(item.values())
        elif kind is list or kind is tuple:
            extend(item)
        else:
            return False
    return True


def encode(value: Any) -> bytes:
    """Return the canonical bytes of ``value`` (dicts, lists, str, int, bool, None).

    A value of plain JSON types only (what :func:`_fast_check` passes) is encoded by
    orjson, whose output for such values is byte for byte ``json.dumps``'s with this
    module's options (``tests/protocol/test_codec_equivalence.py``); anything it
    refuses (a lone surrogate, nesting deeper than it goes) and every other value
    take the ``json`` path, which names what is wrong.
    """
    if _fast_check(value):
        if _ORJSON:
            try:
                return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
            except TypeError:
                pass
    else:
        _check(value)
    try:
        text = _dumps(value)
    except RecursionError as exc:
        raise NonCanonical("value nested too deeply to encode") from exc
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Only a lone surrogate fails here; walk the value to name where it is.
        _check(value)
        raise NonCanonical("a string holds a lone surrogate; it has no UTF-8 form") from None


def _no_floats(text: str) -> Any:
    raise NonCanonical(f"number {text} is not an integer")


def _no_constants(name: str) -> Any:
    raise NonCanonical(f"{name} is not allowed")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise NonCanonical(f"duplicate object key {key!r}")
        out[key] = value
    return out


_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19
"""Nineteen digits in a row: the only way an integer outside the signed 64-bit range
can appear (``-2**63`` has 19 digits); strings with such runs are rare.  Found by a
translate and a substring search (both C loops, far faster than a regex here)."""


def _dumps(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def decode(data: bytes) -> Any:
    """Parse canonical bytes; raise :class:`NonCanonical` for anything else.

    The fast path parses with the stdlib's C decoder (floats and constants refused
    by hook; orjson's parser is not used: it holds about 13 times the input while
    parsing) and checks that the encoder (orjson, else the stdlib's) gives back
    exactly ``data``: every other spelling
    (key order, duplicate keys, spacing, escapes, ``-0``) fails that comparison, and
    an integer out of range needs a run of 19 digits.  Any doubt goes to
    :func:`_decode_strict`, which names what is wrong.
    """
    try:
        value = json.loads(
            data.decode("utf-8"), parse_float=_no_floats, parse_constant=_no_constants
        )
        if _ORJSON:
            same = orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == data
        else:
            same = _dumps(value).encode("utf-8") == data
    except (ValueError, TypeError, RecursionError, NonCanonical):
        same = False  # UnicodeError and JSONDecodeError are ValueErrors; orjson's are TypeErrors
    if same and (_LONG_DIGITS not in data.translate(_DIGITS_AS_ZERO) or _fast_check(value)):
        return value
    return _decode_strict(data)


def _decode_strict(data: bytes) -> Any:
    """:func:`decode` the slow way: every object through a duplicate-key hook, then the
    value encoded again with the full type check; raises the precise refusal."""
    try:
        text = data.decode("utf-8")
        value = json.loads(
            text,
            parse_float=_no_floats,
            parse_constant=_no_constants,
            object_pairs_hook=_unique_keys,
        )
    except UnicodeDecodeError as exc:
        raise NonCanonical("not valid UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise NonCanonical(f"not valid JSON: {exc.msg} at byte {exc.pos}") from exc
    except RecursionError as exc:
        raise NonCanonical("JSON nested too deeply") from exc
    except ValueError as exc:  # an integer literal over the interpreter's digit limit
        raise NonCanonical(
            "an integer has thousands of digits; canonical integers are signed 64-bit"
        ) from exc
    if encode(value) != data:
        raise NonCanonical("valid JSON but not in canonical form (key order, spacing or escapes)")
    return value
