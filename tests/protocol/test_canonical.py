"""Canonical JSON: one byte string per value, everything else refused."""

from __future__ import annotations

import enum
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealmem.protocol import canonical
from sealmem.protocol.canonical import MAX_INT, NonCanonical
from sealmem.protocol.errors import ProtocolError

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_INT - 1, max_value=MAX_INT)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@given(json_values)
def test_round_trip_is_exact(value: Any) -> None:
    data = canonical.encode(value)
    assert canonical.decode(data) == value
    assert canonical.encode(canonical.decode(data)) == data


def test_keys_sorted_no_whitespace_utf8() -> None:
    assert (
        canonical.encode({"b": 1, "a": ["é", None, True]}) == '{"a":["é",null,true],"b":1}'.encode()
    )


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (1.5, r"\$"),
        ({"a": [1, 2.0]}, r"\$\.a\[1\]"),
        ({"n": MAX_INT + 1}, r"\$\.n"),
        ({1: "int key"}, "key"),
        ({"s": {1, 2}}, "set"),
    ],
)
def test_encode_refuses_and_names_the_path(value: Any, path: str) -> None:
    with pytest.raises(NonCanonical, match=path):
        canonical.encode(value)


def test_int_subclasses_encode_as_their_value() -> None:
    class Level(enum.IntEnum):
        HIGH = 3

    assert canonical.encode({"level": Level.HIGH}) == b'{"level":3}'


@pytest.mark.parametrize(
    "data",
    [
        b'{"b":1,"a":2}',  # key order
        b'{"a": 1}',  # whitespace
        b'{"a":1.0}',  # float
        b'{"a":1e3}',  # exponent
        b'{"a":NaN}',  # constant
        b'{"a":1,"a":2}',  # duplicate key
        b'"\\u00e9"',  # escaped where UTF-8 is canonical
        b"\xff",  # not UTF-8
        b'{"a":',  # truncated
        b"[" * 100_000 + b"]" * 100_000,  # nesting bomb
    ],
)
def test_decode_refuses_every_other_spelling(data: bytes) -> None:
    with pytest.raises(NonCanonical):
        canonical.decode(data)


def test_non_canonical_is_a_protocol_error() -> None:
    assert issubclass(NonCanonical, ProtocolError)


@pytest.mark.parametrize("data", [b"1" * 5000, b'{"seq":-' + b"9" * 5000 + b"}"])
def test_decode_refuses_integers_over_the_digit_limit(data: bytes) -> None:
    # Python refuses int literals over 4300 digits with a bare ValueError; a
    # garbage object must still be refused as NonCanonical (a named reason).
    with pytest.raises(NonCanonical, match="digits"):
        canonical.decode(data)
