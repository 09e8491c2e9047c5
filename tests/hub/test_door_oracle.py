"""``GET /requests/{kid}`` tells a caller whose signature does not verify nothing.

Before, a kid the hub did not know got 404 ``no-request`` before any signature
check while a member's kid got 401: whether a key is in a team was one unsigned
request away.  Later, a member's kid with a bad signature got 401
``bad-signature`` and a stranger's 401 ``unknown-key``: the same question, one
code apart.  Both are ``unknown-key`` now.
"""

from __future__ import annotations

import pytest

from sealmem.crypto import MemberKey
from sealmem.crypto.request import body_digest
from sealmem.protocol.encoding import b64e
from tests.hub.conftest import TEAM
from tests.hub.test_door import Door, door

pytestmark = pytest.mark.slow

__all__ = ["door"]  # the fixture, re-exported for pytest


def _ask_unsigned(door: Door, kid: str) -> tuple[int, str]:
    path = f"/v1/teams/{TEAM}/requests/{kid}"
    headers = {
        "Sealmem-Kid": kid,
        "Sealmem-Time": str(door.clock()),
        "Sealmem-Nonce": b64e(b"n" * 16),
        "Sealmem-Signature": b64e(bytes(64)),
        "Sealmem-Digest": body_digest(b""),
    }
    answer = door.client.get(path, headers=headers)
    return answer.status_code, answer.json()["error"]


def test_a_bad_signature_learns_no_membership(door: Door) -> None:
    member = door.world.nodes["alice"].key.kid
    stranger = MemberKey.generate().kid
    assert _ask_unsigned(door, member) == (401, "unknown-key")
    assert _ask_unsigned(door, stranger) == (401, "unknown-key")  # no 404 before a check
    pending = MemberKey.generate()
    assert door.post(pending) == 201
    assert _ask_unsigned(door, pending.kid) == (401, "unknown-key")
    status, doc = door.get(pending, f"/requests/{pending.kid}")
    assert (status, doc["status"]) == (200, "pending")
    gone = MemberKey.generate()  # signs well, but the hub holds no key of it
    assert door.transport(gone).join_status(gone.kid) == "unknown"
