"""Fixtures for the crypto tests: keys pinned to fixed seeds."""

from __future__ import annotations

import pytest

from sealmem.crypto import ContentKey, MemberKey


@pytest.fixture
def alice() -> MemberKey:
    return MemberKey.from_seeds(bytes(range(32)), bytes(range(32, 64)))


@pytest.fixture
def bob() -> MemberKey:
    return MemberKey.from_seeds(b"\xb0" * 32, b"\xb1" * 32)


@pytest.fixture
def content_key() -> ContentKey:
    return ContentKey.from_bytes(bytes(range(0x80, 0xA0)))
