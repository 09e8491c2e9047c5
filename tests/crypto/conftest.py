"""Fixtures for the crypto tests: keys pinned to fixed seeds."""

from __future__ import annotations

import pytest

from sealmem.crypto import ContentKey, MemberKey


@pytest.fixture
def alice() -> MemberKey:
    return MemberKey(bytes(range(32)), bytes(range(32, 64)))


@pytest.fixture
def bob() -> MemberKey:
    return MemberKey(b"\xb0" * 32, b"\xb1" * 32)


@pytest.fixture
def content_key() -> ContentKey:
    return ContentKey(bytes(range(0x80, 0xA0)))
