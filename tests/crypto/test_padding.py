"""Padmé lengths and the 0x80-then-zeros padding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealmem.crypto import SUITE, DecryptionError, pad, padme, unpad
from sealmem.protocol.errors import InputError


def _reference_padme(length: int) -> int:
    """The PURBs paper's algorithm, written with floating-point log2 (for small L)."""
    import math

    e = math.floor(math.log2(length))
    s = math.floor(math.log2(e)) + 1
    mask = (1 << (e - s)) - 1
    return (length + mask) & ~mask


@pytest.mark.parametrize(
    ("length", "padded"),
    [(0, 0), (1, 1), (2, 2), (7, 7), (9, 10), (17, 18), (33, 36), (65, 72), (129, 144),
     (1000, 1024), (1025, 1088), (10**6, 1015808)],
)  # fmt: skip
def test_known_lengths(length: int, padded: int) -> None:
    assert padme(length) == padded


@given(st.integers(min_value=2, max_value=2**40))
def test_matches_reference(length: int) -> None:
    assert padme(length) == _reference_padme(length)


@given(st.integers(min_value=0, max_value=2**48))
def test_padded_is_larger_and_overhead_at_most_12_percent(length: int) -> None:
    padded = padme(length)
    assert padded >= length
    assert padded - length <= 0.12 * length
    assert padme(padded) == padded  # idempotent: padded sizes are fixed points


def test_few_distinct_sizes() -> None:
    # Lengths with E = 12 keep S = 4 significant bits: 2**4 steps, plus 2**13 itself.
    sizes = {padme(n) for n in range(4096, 8192)}
    assert len(sizes) == 17
    assert max(sizes) == 8192


def test_padme_refuses_negative() -> None:
    with pytest.raises(InputError):
        padme(-1)


@given(st.binary(max_size=5000))
def test_pad_round_trip(data: bytes) -> None:
    padded = pad(data)
    assert len(padded) == padme(len(data) + 1) >= len(data) + 1
    assert padded[: len(data)] == data
    assert padded[len(data)] == 0x80
    assert unpad(padded) == data
    assert SUITE.unpad(SUITE.pad(data)) == data


def test_pad_exact_bytes() -> None:
    assert pad(b"") == b"\x80"
    assert pad(b"12345678") == b"12345678\x80\x00"  # 9 -> 10


@pytest.mark.parametrize(
    "bad",
    [
        b"",  # empty
        b"\x00\x00",  # no marker
        b"abc",  # no marker, no zeros
        b"12345678\x81\x00",  # wrong marker
        b"1234567\x80\x00\x00",  # 7 bytes of content pad to 8, not 10
        b"12345678\x80\x00\x00\x00",  # too many zeros
    ],
)
def test_unpad_refuses_bad_padding(bad: bytes) -> None:
    with pytest.raises(DecryptionError, match="padding"):
        unpad(bad)
