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


@pytest.mark.slow
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


# -- lone surrogates and the escape table (SPEC.md "Canonical JSON") ----------------------


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("\ud800", r"\$ holds a lone surrogate U\+D800"),
        ({"name": "ok\udfff"}, r"\$\.name holds a lone surrogate U\+DFFF"),
        ({"\udc00": 1}, r"\$ \(an object key\) holds a lone surrogate U\+DC00"),
        ([1, {"k": ["fine", "a\ud83db"]}], r"\$\[1\]\.k\[1\] holds a lone surrogate U\+D83D"),
    ],
)
def test_encode_refuses_lone_surrogates_by_name(value: Any, path: str) -> None:
    with pytest.raises(NonCanonical, match=path) as info:
        canonical.encode(value)
    assert not isinstance(info.value, UnicodeError)


@pytest.mark.parametrize(
    "data",
    [
        b'"\\ud800"',  # a lone high surrogate, escaped
        b'"\\udfff"',  # a lone low surrogate, escaped
        b'{"a":"x\\udc00y"}',  # inside an object value
        b'{"\\ud800":1}',  # as an object key
        b'["\\udc00\\ud800"]',  # a pair in the wrong order is two lone surrogates
        b'"\\ud83d\\ude00"',  # a valid pair, escaped where UTF-8 is canonical
        b'"\xed\xa0\x80"',  # a surrogate encoded as UTF-8 bytes (CESU-style)
    ],
)
def test_decode_refuses_surrogates_as_non_canonical(data: bytes) -> None:
    with pytest.raises(NonCanonical):
        canonical.decode(data)


SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"])


@given(st.lists(st.characters() | SURROGATES, max_size=12).map("".join))
def test_any_string_encodes_or_is_refused_by_name(text: str) -> None:
    if any("\ud800" <= c <= "\udfff" for c in text):
        with pytest.raises(NonCanonical, match="lone surrogate"):
            canonical.encode({text: [text]})
        return
    assert canonical.decode(canonical.encode({text: [text]})) == {text: [text]}


@given(st.binary(max_size=40))
def test_decode_of_any_bytes_gives_a_value_or_non_canonical(data: bytes) -> None:
    try:
        value = canonical.decode(data)
    except NonCanonical:
        return
    assert canonical.encode(value) == data


@pytest.mark.parametrize(
    ("char", "escaped"),
    [
        ('"', b'\\"'),
        ("\\", b"\\\\"),
        ("\b", b"\\b"),
        ("\f", b"\\f"),
        ("\n", b"\\n"),
        ("\r", b"\\r"),
        ("\t", b"\\t"),
        ("\x00", b"\\u0000"),
        ("\x1b", b"\\u001b"),
        ("\x1f", b"\\u001f"),
        ("/", b"/"),
        ("\x7f", b"\x7f"),
        ("\u2028", "\u2028".encode()),
        ("\u2029", "\u2029".encode()),
        ("é", "é".encode()),
        ("\ufeff", "\ufeff".encode()),
        ("\U0001f600", "\U0001f600".encode()),
    ],
)
def test_escape_table(char: str, escaped: bytes) -> None:
    assert canonical.encode(char) == b'"' + escaped + b'"'
    assert canonical.decode(b'"' + escaped + b'"') == char


def test_keys_sort_by_code_point_not_utf16_units() -> None:
    # U+E000 < U+1F600 by code point (and by UTF-8 bytes); in UTF-16 the
    # surrogate pair of U+1F600 (0xD83D ...) would sort before 0xE000.
    data = canonical.encode({"\U0001f600": 1, "\ue000": 2, "z": 3, "Z": 4, "é": 5})
    assert data == '{"Z":4,"z":3,"é":5,"\ue000":2,"\U0001f600":1}'.encode()
