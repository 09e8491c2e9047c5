"""Where a member's private space lives in the hub's storage (SPEC.md "Private memories
and trust follow the member"): the manifest, chunk and keyring tables and blobs of the
team chains, under slot names no project can take.

A private chain of (member, project) is stored as the project ``p-{member}-{h}``, with
``h`` the first 16 bytes of BLAKE2b(project) in hex (a slot name fits the blob path's
64 characters); the member keyrings as the project ``p-{member}``, a device's trust
decisions as ``p-{member}-{device}``.  The hub refuses
these names as projects of the team routes, and the change feed shows a slot only to
its writer (it is no project anyone may read).
"""

from __future__ import annotations

import re

from ..crypto import SUITE

__all__ = ["chain_slot", "is_private_slot", "keyring_slot", "slot_prefix"]

_SLOT = re.compile(r"^p-[a-z2-7]{26}(-[0-9a-f]{32}|-[a-z2-7]{26})?$")


def keyring_slot(member: str) -> str:
    return f"p-{member}"


def trust_slot(member: str, writer: str) -> str:
    """Where ``writer``'s trust decisions are kept (a keyring row, its seq as the roster
    version: the same compare-and-swap)."""
    return f"p-{member}-{writer}"


def slot_prefix(member: str) -> str:
    """What every chain slot of ``member`` starts with."""
    return f"p-{member}-"


def chain_slot(member: str, project: str) -> str:
    digest = SUITE.blake2b(b"sealmem/v1/hub/private-slot\x00" + project.encode(), size=16)
    return slot_prefix(member) + digest.hex()


def is_private_slot(project: str) -> bool:
    return _SLOT.fullmatch(project) is not None
