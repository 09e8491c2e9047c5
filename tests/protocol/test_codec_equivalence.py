"""The fast canonical codec and ``Record.from_wire`` agree with their strict paths.

``canonical.encode`` hands values of plain JSON types to orjson: its bytes must be
``json.dumps``'s with the canonical options (kept here as the reference), for
every value and every code point.  Both fast decode paths (orjson, and the
stdlib one used without it) are checked.

``canonical._decode_strict`` is the decoder as it was before the fast path (a
duplicate-key hook on every object, then the full encode compared): every input
either decodes to the same value on both paths or is refused on both, with the
same message.  ``Record._from_wire_checked`` is the field-by-field build: the
short path of ``from_wire`` returns the same record or the same refusal.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sealmem.protocol import canonical
from sealmem.protocol.canonical import MAX_INT, NonCanonical
from sealmem.protocol.errors import ProtocolError
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_INT - 1, max_value=MAX_INT)
    | st.integers()
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


def reference(value: Any) -> bytes:
    """Canonical bytes as the encoder made them before orjson (the specification's)."""
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


@pytest.fixture(params=["orjson", "stdlib"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with orjson, then with the stdlib fast path alone."""
    if request.param == "stdlib":
        monkeypatch.setattr(canonical, "_ORJSON", False)
    else:
        assert canonical._ORJSON, "orjson is a dependency: install it"
    return str(request.param)


plain_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_INT - 1, max_value=MAX_INT)
    | st.text(st.characters(exclude_categories=["Cs"]), max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(st.characters(exclude_categories=["Cs"]), max_size=6),
                          children, max_size=4)
    ),
    max_leaves=25,
)  # fmt: skip


@pytest.mark.slow
@given(plain_values)
def test_encode_is_byte_identical_to_the_reference(value: Any) -> None:
    assert canonical.encode(value) == reference(value)


def test_every_code_point_encodes_as_the_reference() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert canonical.encode(text) == reference(text)
    assert canonical.encode({text[:5000]: [text[-5000:]]}) == reference(
        {text[:5000]: [text[-5000:]]}
    )
    for c in range(0x800):  # one by one where the escapes are
        assert canonical.encode(chr(c)) == reference(chr(c))


def test_deep_values_and_surrogates_take_the_stdlib_path() -> None:
    deep: Any = 1
    for _ in range(400):  # deeper than orjson encodes
        deep = [deep]
    assert canonical.encode(deep) == reference(deep)
    assert canonical.decode(reference(deep)) == deep
    with pytest.raises(NonCanonical, match="surrogate"):
        canonical.encode({"a": "\ud800"})


def _outcome(decoder: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "ok", decoder(data)
    except NonCanonical as exc:
        return "refused", str(exc)


def _spellings(value: Any) -> list[bytes]:
    """Canonical bytes of ``value`` and other spellings of it (when it has a canonical form)."""
    try:
        canon = canonical._dumps(value).encode("utf-8")
    except (ValueError, RecursionError):
        return []
    spaced = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    ascii_ = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return [canon, spaced, ascii_, b" " + canon, canon + b"\n"]


ONE_CODEC = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # constant


@pytest.mark.slow
@ONE_CODEC
@given(json_values)
@example({"a": 2**63})
@example({"a": -(2**63) - 1})
@example({"a": 10**18, "b": "1234567890123456789012"})
@example("\ud800")
@example({"x": [-0, 0]})
def test_decode_matches_the_strict_decoder_on_every_spelling(codec: str, value: Any) -> None:
    for data in _spellings(value):
        assert _outcome(canonical.decode, data) == _outcome(canonical._decode_strict, data)


@pytest.mark.slow
@ONE_CODEC
@given(json_values, st.integers(min_value=0), st.binary(min_size=0, max_size=3))
def test_decode_matches_the_strict_decoder_on_damaged_bytes(
    codec: str, value: Any, at: int, junk: bytes
) -> None:
    try:
        data = canonical.encode(value)
    except NonCanonical:
        return
    cut = at % (len(data) + 1)
    for damaged in (data[:cut] + junk + data[cut:], data[:cut] + junk + data[cut + 1 :]):
        assert _outcome(canonical.decode, damaged) == _outcome(canonical._decode_strict, damaged)


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":1,"a":1}',
        b'{"a":-0}',
        b'{"n":9223372036854775808}',
        b'{"n":-9223372036854775809}',
        b'{"s":"\\ud800"}',
        b'{"s":"\\u007f"}',
        b'{"n":9223372036854775807,"m":-9223372036854775808}',
        b'{"n":18446744073709551616}',
        b'{"n":1.0}',
        b'{"n":NaN}',
        b"[" * 2000 + b"]" * 2000,
    ],
)
def test_decode_edge_cases_match(codec: str, data: bytes) -> None:
    assert _outcome(canonical.decode, data) == _outcome(canonical._decode_strict, data)


KID = "a" * 26


def _wire() -> dict[str, Any]:
    return Record(
        id=new_memory_id(1_700_000_000_000, bytes(range(10))),
        project="webapp",
        kind="note",
        content="use the staging database",
        keywords=("staging", "db"),
        importance=0.5,
        author=KID,
        editor=KID,
        created_at=1_700_000_000_000,
        hlc=Hlc(1_700_000_000_000, 3),
        supersedes=(new_memory_id(1_600_000_000_000, bytes(10)),),
        delete_reason=None,
    ).to_wire()


class Text(str):
    pass


class Number(int):
    pass


ODD = st.sampled_from(
    [
        None, True, False, 0, 1, -1, 500, 1001, 2**63, 1.5, "", "x", "team", "private",
        Text("note"), Number(5), [], ["a"], ["a", 1], [1, 2], [True, 0], [0, 2**16],
        [2**47, 0], [0, 0, 0], {"a": 1}, ("a",), "\n", "a" * 70, "agent", "hook", "Agent",
        Text("person"),
    ]
)  # fmt: skip


def _build(builder: Any, data: Any) -> tuple[str, Any]:
    try:
        return "ok", builder(data).to_wire()
    except ProtocolError as exc:
        return "refused", str(exc)


@given(
    st.dictionaries(st.sampled_from(sorted([*_wire(), "source"])), ODD, max_size=3), st.booleans()
)
def test_from_wire_short_path_matches_the_checked_build(
    changes: dict[str, Any], drop: bool
) -> None:
    wire = {**_wire(), **changes}
    if drop and changes:
        del wire[next(iter(changes))]
    assert _build(Record.from_wire, wire) == _build(Record._from_wire_checked, wire)


def test_from_wire_short_path_keeps_every_refusal_of_a_plain_record() -> None:
    wire = _wire()
    assert Record.from_wire(wire).to_wire() == wire
    for key, bad in [("importance", True), ("hlc", [1, True]), ("keywords", ["a", 1])]:
        with pytest.raises(ProtocolError, match=key):
            Record.from_wire({**wire, key: bad})
