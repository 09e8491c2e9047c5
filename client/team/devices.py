"""A member's devices (SPEC.md "Devices and identity"): invite one, join as one, list
them, revoke one.

``device add`` on an existing device signs a device invite (:func:`invite_device`);
``device join`` on the new machine checks it, shows the root fingerprint, makes its
keys and posts a device join request (:func:`join_device`), filed as a join request;
an admin approves it with ``admin approve`` (the admin is the only gate: no sync
approves one by itself).  Until the new device's first sync as a member the invite
is kept in the home (:data:`ENROLMENT_FILE`), and that sync stops before publishing
unless the roster chain holds what the invite cited (``sync/enrolment.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...crypto import SUITE, MemberKey, random_bytes
from ...protocol import admin as edits
from ...protocol import reasons
from ...protocol.device_invite import (
    DEVICE_INVITE_PREFIX,
    MAX_DEVICE_INVITE_MS,
    DeviceInvite,
    read_device_invite,
    seal_device_invite,
    seal_device_join,
)
from ...protocol.encoding import b64e
from ...protocol.errors import InputError, Rejected
from ...protocol.invite import new_invite_id
from ...protocol.names import name_skeleton, select
from ...protocol.roster import Member, Roster
from ..fsutil import atomic_write
from ..sync.enrolment import ENROLMENT_FILE
from ..sync.session import CONFIG_FILE, Team, TeamConfig, find_member, transport_for
from .invite import line_bytes
from .join import join_location
from .publish import admin_state, change

__all__ = [
    "DeviceRow",
    "device_rows",
    "invite_device",
    "join_device",
    "read_device_invite_text",
    "revoke_device",
]


def invite_device(
    team: Team, name: str, now: int, *, lifetime_ms: int = MAX_DEVICE_INVITE_MS
) -> str:
    """A device invite line for a new device ``name`` of this member, signed by this
    device (any member may invite its own devices; an admin approves them)."""
    state, _ = team.refresh(team.trusted(), now)
    roster = state.roster
    me = None if roster is None else roster.member(team.me)
    if roster is None or me is None or roster.revocation(team.me) is not None:
        raise InputError(
            "this device is not a member of the team yet (or was revoked): only a member's "
            "device can invite another; run 'sealmem sync' once the admin approved it"
        )
    taken = [m.device_name or "device 1" for m in roster.devices_of(me.id)]
    if any(name_skeleton(t) == name_skeleton(name) for t in taken):
        raise InputError(
            f"you already have a device named like {name!r} ({', '.join(taken)}); "
            "choose another name"
        )
    invite = DeviceInvite(
        team=team.config.team, member=me.id, name=name, signer_public=team.key.sign_public,
        root_public=team.config.root_public, root_box_public=team.config.root_box_public,
        location=team.config.location, transport=team.config.transport,
        roster_version=roster.version, roster_hash=roster.hash(SUITE), created_at=now,
        expires_at=now + lifetime_ms, invite_id=new_invite_id(random_bytes),
    )  # fmt: skip
    return DEVICE_INVITE_PREFIX + b64e(seal_device_invite(invite, team.key))


def read_device_invite_text(text: str, *, now: int) -> tuple[DeviceInvite, bytes]:
    """Parse and check a device invite line at ``now``; :class:`InputError` says what is wrong."""
    data = line_bytes(
        text, DEVICE_INVITE_PREFIX, "device invite",
        "run 'sealmem device add NAME' on your other device and paste its line", "copy it again",
    )  # fmt: skip
    try:
        return read_device_invite(SUITE, data, now_ms=now), data
    except Rejected as exc:
        if exc.reason in (reasons.INVITE_EXPIRED, reasons.CLOCK_AHEAD):
            raise InputError(f"the device invite is refused: {exc.detail}") from exc
        raise InputError(f"the device invite is damaged or forged ({exc}); copy it again") from exc


def join_device(
    home_dir: Path,
    invite: DeviceInvite,
    invite_data: bytes,
    key: MemberKey,
    *,
    folder: str | None = None,
    hub: str | None = None,
    now: int,
) -> TeamConfig:
    """Pin the invite's root key, save the team config and the invite, post the device
    join request (self-signed by ``key``, this machine's new device key)."""
    if (Path(home_dir) / CONFIG_FILE).exists():
        raise InputError(f"this sealmem home ({home_dir}) is already in a team")
    location, kind = join_location(invite.location, invite.transport, folder=folder, hub=hub)
    config = TeamConfig(
        team=invite.team, root_public=invite.root_public, root_box_public=invite.root_box_public,
        location=location, name=invite.name, transport=kind,
    )  # fmt: skip
    request = seal_device_join(
        team=invite.team, key=key, sign_public=key.sign_public, box_public=key.box_public,
        created_at=now, invite_data=invite_data, invite=invite,
    )  # fmt: skip
    transport = transport_for(config, key)
    try:
        transport.post_request(key.kid, request)
    finally:
        transport.close()
    atomic_write(Path(home_dir) / ENROLMENT_FILE, (b64e(invite_data) + "\n").encode())
    config.save(home_dir)
    return config


@dataclass(frozen=True)
class DeviceRow:
    member: str
    member_id: str
    name: str
    kid: str
    added_at: int
    revoked_at: int | None
    this_device: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "member": self.member, "member_id": self.member_id, "name": self.name,
            "kid": self.kid, "added_at": self.added_at, "revoked_at": self.revoked_at,
            "this_device": self.this_device,
        }  # fmt: skip


def device_rows(roster: Roster, me: str, *, everyone: bool = False) -> list[DeviceRow]:
    """This member's devices (``everyone``: every member's), revoked ones included."""
    mine = roster.member(me)
    members = (
        roster.members
        if everyone or mine is None
        else [m for m in roster.members if m.id == mine.id]
    )
    rows = []
    for m in members:
        person = roster.person(m.id)
        for d in roster.devices_of(m.id):
            revoked = roster.revocation(d.kid)
            added = next((x.added_at for x in person.devices if x.kid == d.kid), 1) if person else 1
            rows.append(DeviceRow(
                m.name, m.id, d.device_name or "device 1", d.kid, added,
                None if revoked is None else revoked.at_version, d.kid == me,
            ))  # fmt: skip
    return rows


def find_device(roster: Roster, who: str, me: str, member: str | None) -> Member:
    """A device by kid (or kid prefix) or by name among one member's devices (``member``,
    default this device's member)."""
    owner = find_member(roster, member) if member else roster.member(me)
    if owner is None:
        raise InputError("this device is not in the roster; give --member")
    devices = roster.devices_of(owner.id)
    by_id, by_name = select(who, [(d.kid, d.device_name or "device 1") for d in devices])
    found = {*by_id, *by_name}
    if len(found) != 1:
        names = ", ".join(f"{d.device_name or 'device 1'!r} ({d.kid[:8]})" for d in devices)
        why = "matches several devices" if found else "is not a device"
        raise InputError(f"{who!r} {why} of {owner.name}; devices: {names}")
    device = roster.member(found.pop())
    assert device is not None
    return device


def revoke_device(
    team: Team, who: str, *, member: str | None = None, keep_data: bool = True, now: int
) -> tuple[Roster, Member]:
    """Revoke one device (an admin's act): a roster with its revocation and a new epoch
    of every project its member may read; by default its manifests stay valid (pinned)."""
    state, roster = admin_state(team, now)
    if not roster.people:
        raise InputError(
            "this team lists no devices yet (roster v1): to take a member's key away, "
            "use 'sealmem admin revoke MEMBER'"
        )
    device = find_device(roster, who, team.me, member)
    if device.kid == team.me:
        raise InputError("refusing to revoke this device itself; revoke it from another device")
    pins = edits.pins_for(state, device.kid) if keep_data else {}
    readable = [p for p in roster.projects if roster.can_read(device.kid, p)]
    new = change(team, state, [edits.revoking_device(device.kid, pins=pins)], now, new=readable)
    return new, device
