"""Fixtures for the crypto tests: pinned keys, and the byte-flipping helper."""

from __future__ import annotations

import pytest

from sealmem.crypto import ContentKey, MemberKey


def flip_byte(data: bytes, index: int) -> bytes:
    """``data`` with the byte at ``index`` (negative counts from the end) XORed with 0x01."""
    out = bytearray(data)
    out[index] ^= 0x01
    return bytes(out)


@pytest.fixture
def alice() -> MemberKey:
    return MemberKey.from_seeds(bytes(range(32)), bytes(range(32, 64)))


@pytest.fixture
def bob() -> MemberKey:
    return MemberKey.from_seeds(b"\xb0" * 32, b"\xb1" * 32)


@pytest.fixture
def content_key() -> ContentKey:
    return ContentKey.from_bytes(bytes(range(0x80, 0xA0)))
