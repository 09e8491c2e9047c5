"""One member's two devices, over any transport (the folder tests and the hub tests call
these with their own world and ``open_team``): enrolment through a device invite, and
the two devices writing in turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sealmem.client.clock import now_ms
from sealmem.client.sync.session import Team
from sealmem.client.team.approval import approve
from sealmem.client.team.devices import invite_device, join_device, read_device_invite_text
from sealmem.protocol.device_invite import DEVICE_JOIN_FORMAT
from sealmem.protocol.encoding import b64e
from sealmem.protocol.envelope import seal

from .machines import contents

__all__ = ["add_device", "alternate_devices", "bad_invite_join"]

PROJECT = "webapp"


def add_device(
    owner: Any, new: Any, admin: Any, open_team: Callable[[Any], Team], name: str = "desktop"
) -> None:
    """``owner`` prints a device invite, ``new`` (a fresh home) joins with it, ``admin``
    approves the request; ``new`` then has its team open."""
    line = invite_device(owner.t, name, now_ms())
    invite, data = read_device_invite_text(line, now=now_ms())
    join_device(new.home, invite, data, new.key, now=now_ms())
    approve(admin.t, [new.key.kid], projects=None, read=True, write=True, now=now_ms())
    new.team = open_team(new)


def alternate_devices(laptop: Any, desktop: Any, mate: Any, rounds: int = 3) -> dict[str, int]:
    """Two devices of one member write in turn and sync, a teammate syncs after each
    write: return the counts (each device's memories, the teammate's, the texts written),
    after checking the teammate never loses one it had (no flip-flop)."""
    written: set[str] = set()
    seen: set[str] = set()
    for n in range(rounds):
        for who in (laptop, desktop):
            text = f"{who.name} round {n}: the deploy key rotates on day {n}"
            who.remember(text)
            written.add(text)
            who.sync()
            mate.sync()
            now = contents(mate, PROJECT)
            assert seen <= now, seen - now  # what the teammate had stays
            seen = now
    for who in (laptop, desktop):
        who.sync()
    counts = {
        "written": len(written),
        laptop.name: len(written & contents(laptop, PROJECT)),
        desktop.name: len(written & contents(desktop, PROJECT)),
        mate.name: len(written & contents(mate, PROJECT)),
    }
    print(f"two devices, {rounds} rounds: {counts}")
    return counts


def bad_invite_join(team: str, member: str, key: Any) -> bytes:
    """A self-signed device join request whose invite field is not base64url."""
    body = {
        "format": DEVICE_JOIN_FORMAT, "team": team, "member": member,
        "kid": key.kid, "name": "phone",
        "sign_public": b64e(key.sign_public), "box_public": b64e(key.box_public),
        "created_at": now_ms(), "invite": "not base64url!",
    }  # fmt: skip
    return seal(body, "device-join", key)
