"""Members and their devices in roster v2 (SPEC.md "Devices and identity").

A member is a person; a device is one key pair that writes for that member.  The
member id is the kid of the member's first device.  :class:`Person` is a member of
``sealmem/roster/v2`` with its devices; :func:`check_people` holds the rules inside
one roster, :func:`check_extends` the chain rules from one version to the next
(an upgrade from v1 included).  Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from . import reasons
from .encoding import (
    INVITE_ID_RE,
    b64e,
    exact_keys,
    need_b64,
    need_bool,
    need_int,
    need_kid,
    need_list,
    need_str,
)
from .errors import Rejected
from .names import name_problem, name_skeleton
from .settings import malformed_roster
from .suite import Suite

__all__ = [
    "MAX_DEVICES",
    "MAX_LIVE_DEVICES",
    "ROLES",
    "Device",
    "Introduced",
    "Person",
    "check_extends",
    "check_people",
    "flat_devices",
    "key_owners",
    "need_role",
    "upgrade_people",
]

MAX_DEVICES = 32
"""Devices one member may list, revoked ones included."""
MAX_LIVE_DEVICES = 4096
"""Unrevoked devices in one roster: one keyring wraps to at most this many."""
FIRST_DEVICE_NAME = "device 1"
_KEY = 32
_DEVICE_KEYS = frozenset(
    {"kid", "name", "sign_public", "box_public", "added_at", "approved_by", "introduced_by"}
    | {"issued_by_admin"}
)
_PERSON_KEYS = frozenset({"id", "name", "role", "removed_at", "devices"})
ROLES = ("admin", "member")


def need_role(value: object, path: str) -> str:
    """A member's role in a roster (v1 or v2): one of :data:`ROLES`."""
    if (role := need_str(value, path)) not in ROLES:
        raise malformed_roster(f"{path} {role!r} must be one of {ROLES}")
    return role


@dataclass(frozen=True, slots=True)
class Introduced:
    """The member's own device that signed the device invite, and that invite's id."""

    device: str
    invite_id: str

    def to_wire(self) -> dict[str, Any]:
        return {"device": self.device, "invite_id": self.invite_id}


@dataclass(frozen=True, slots=True)
class Device:
    kid: str
    name: str
    sign_public: bytes
    box_public: bytes
    added_at: int
    approved_by: str
    introduced_by: Introduced | None = None
    issued_by_admin: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {
            "kid": self.kid,
            "name": self.name,
            "sign_public": b64e(self.sign_public),
            "box_public": b64e(self.box_public),
            "added_at": self.added_at,
            "approved_by": self.approved_by,
            "introduced_by": None if self.introduced_by is None else self.introduced_by.to_wire(),
            "issued_by_admin": self.issued_by_admin,
        }

    @classmethod
    def from_wire(cls, value: object, path: str) -> Device:
        obj = exact_keys(value, _DEVICE_KEYS, path)
        intro = obj["introduced_by"]
        introduced = None
        if intro is not None:
            raw = exact_keys(intro, {"device", "invite_id"}, f"{path}.introduced_by")
            introduced = Introduced(
                need_kid(raw["device"], f"{path}.introduced_by.device"),
                need_str(raw["invite_id"], f"{path}.introduced_by.invite_id", pattern=INVITE_ID_RE),
            )
        return cls(
            kid=need_kid(obj["kid"], f"{path}.kid"),
            name=need_str(obj["name"], f"{path}.name"),
            sign_public=need_b64(obj["sign_public"], f"{path}.sign_public", size=_KEY),
            box_public=need_b64(obj["box_public"], f"{path}.box_public", size=_KEY),
            added_at=need_int(obj["added_at"], f"{path}.added_at", minimum=1),
            approved_by=need_kid(obj["approved_by"], f"{path}.approved_by"),
            introduced_by=introduced,
            issued_by_admin=need_bool(obj["issued_by_admin"], f"{path}.issued_by_admin"),
        )


@dataclass(frozen=True, slots=True)
class Person:
    """A member of roster v2: the person, with every device ever listed for it."""

    id: str
    name: str
    role: str
    devices: tuple[Device, ...]
    removed_at: int | None = None

    def device(self, kid: str) -> Device | None:
        return next((d for d in self.devices if d.kid == kid), None)

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "role": self.role,
            "removed_at": self.removed_at,
            "devices": [d.to_wire() for d in self.devices],
        }

    @classmethod
    def from_wire(cls, value: object, path: str) -> Person:
        obj = exact_keys(value, _PERSON_KEYS, path)
        role = need_role(obj["role"], f"{path}.role")
        removed = obj["removed_at"]
        raw = need_list(obj["devices"], f"{path}.devices", max_len=MAX_DEVICES)
        return cls(
            id=need_kid(obj["id"], f"{path}.id"),
            name=need_str(obj["name"], f"{path}.name"),
            role=role,
            devices=tuple(Device.from_wire(d, f"{path}.devices[{i}]") for i, d in enumerate(raw)),
            removed_at=None
            if removed is None
            else need_int(removed, f"{path}.removed_at", minimum=1),
        )


def check_people(
    suite: Suite, people: Iterable[Person], version: int, revoked: Mapping[str, int]
) -> None:
    """The rules of one v2 roster's members (``revoked``: device kid -> at_version);
    ``malformed`` (or ``too-large``) naming the first problem."""
    live = 0
    seen: set[str] = set()
    for p in people:
        for d in p.devices:  # one namespace: a kid resolves to one member and device
            if d.kid in seen:
                raise malformed_roster(f"lists device {d.kid} twice")
            seen.add(d.kid)
        if problem := name_problem(p.name):
            raise malformed_roster(f"member name {p.name!r} {problem}")
        if not p.devices or p.id != p.devices[0].kid:
            raise malformed_roster(f"member {p.id} must be the kid of its first device")
        skeletons: set[str] = set()
        for d in p.devices:
            if suite.kid_from_public(d.sign_public) != d.kid:
                raise malformed_roster(f"device {d.kid} does not match its signing key")
            if problem := name_problem(d.name):
                raise malformed_roster(f"device name {d.name!r} of {p.name!r} {problem}")
            if name_skeleton(d.name) in skeletons:
                raise malformed_roster(f"member {p.name!r} has two devices named like {d.name!r}")
            skeletons.add(name_skeleton(d.name))
            if d.added_at > version:
                raise malformed_roster(f"device {d.kid} is added at a future version {d.added_at}")
            live += d.kid not in revoked
        if p.removed_at is not None:
            if p.removed_at > version:
                raise malformed_roster(
                    f"member {p.id} is removed at a future version {p.removed_at}"
                )
            if any(d.kid not in revoked for d in p.devices):
                raise malformed_roster(f"removed member {p.id} keeps an unrevoked device")
    if live > MAX_LIVE_DEVICES:
        raise Rejected(
            reasons.TOO_LARGE,
            f"roster lists {live} unrevoked devices; the limit is {MAX_LIVE_DEVICES}",
        )


def flat_devices(people: Iterable[Person]) -> dict[str, tuple[Person, Device]]:
    """Every device kid of ``people`` -> (its member, the device); a kid listed twice
    keeps its first place (:func:`check_people` refuses such a roster)."""
    out: dict[str, tuple[Person, Device]] = {}
    for p in people:
        for d in p.devices:
            out.setdefault(d.kid, (p, d))
    return out


def upgrade_people(
    members: Iterable[Any],
    revoked: Mapping[str, int],
    *,
    signer: str,
    first_listed: Mapping[str, int],
) -> tuple[Person, ...]:
    """The members of a v1 roster as v2 members (SPEC "upgrade"): one device each,
    named "device 1", approved by the upgrading roster's ``signer``; ``members`` are
    v1 :class:`~.roster.Member` values, ``first_listed`` the v1 version that first
    listed each kid (1 when unknown)."""
    out = []
    for m in members:
        device = Device(
            kid=m.kid,
            name=FIRST_DEVICE_NAME,
            sign_public=m.sign_public,
            box_public=m.box_public,
            added_at=first_listed.get(m.kid, 1),
            approved_by=signer,
            issued_by_admin=m.issued_by_admin,
        )
        out.append(Person(m.kid, m.name, m.role, (device,), revoked.get(m.kid)))
    return tuple(out)


def check_extends(
    old: Iterable[Person] | None,
    old_members: Iterable[Any],
    new: Iterable[Person],
    *,
    old_version: int,
    new_version: int,
    signer: str,
    old_revoked: Mapping[str, int] | None = None,
) -> None:
    """Chain rules of a v2 roster after ``old`` (its people; None when ``old`` is v1 and
    this is the upgrade, then ``old_members`` are its v1 members and ``old_revoked`` its
    revocations, kid -> at_version); raise ``roster-not-extending`` or ``malformed``
    naming the first problem."""

    def refuse(why: str) -> Rejected:
        return Rejected(reasons.ROSTER_NOT_EXTENDING, f"roster v{new_version} {why}")

    by_id = {p.id: p for p in new}
    if old is None:
        old = _as_upgraded(old_members, by_id, old_version, refuse, old_revoked or {})
    for before in old:
        after = by_id.get(before.id)
        if after is None:
            raise refuse(f"drops member {before.id}")
        if before.removed_at is not None and after.removed_at != before.removed_at:
            raise refuse(f"changes when member {before.id} was removed")
        if len(after.devices) < len(before.devices):
            raise refuse(f"drops a device of member {before.id}")
        for was, now in zip(before.devices, after.devices, strict=False):
            if replace(now, name=was.name) != was:
                raise refuse(f"rewrites device {was.kid} of member {before.id}")
        _check_new_devices(after.devices[len(before.devices) :], after, new_version, signer)
        if after.removed_at is not None and before.removed_at is None:
            _check_removed_now(after, new_version)
    known = {p.id for p in old}
    for p in by_id.values():
        if p.id not in known:
            _check_new_devices(p.devices, p, new_version, signer)
            if p.removed_at is not None:
                raise malformed_roster(f"new member {p.id} is listed as removed")


def _as_upgraded(
    members: Iterable[Any],
    by_id: Mapping[str, Person],
    version: int,
    refuse: Any,
    revoked: Mapping[str, int],
) -> list[Person]:
    """Each v1 member as the upgrade must list it; what the upgrade may not change."""
    out = []
    for m in members:
        p = by_id.get(m.kid)
        if p is None:
            raise refuse(f"drops member {m.kid} in the upgrade from v1")
        first = p.devices[0]
        same_key = (first.sign_public, first.box_public) == (m.sign_public, m.box_public)
        if (p.name, p.role) != (m.name, m.role) or not same_key:
            raise refuse(f"changes member {m.kid} (name, role or key) in the upgrade from v1")
        if first.added_at > version or first.introduced_by is not None:
            raise refuse(f"lists device {m.kid} as added after v{version} in the upgrade")
        if first.issued_by_admin != m.issued_by_admin:
            raise refuse(f"changes issued_by_admin of {m.kid} in the upgrade from v1")
        if p.removed_at != revoked.get(m.kid):
            raise refuse(
                f"lists member {m.kid} with removed_at {p.removed_at} in the upgrade from v1; "
                f"its v1 revocation says {revoked.get(m.kid)}"
            )
        out.append(replace(p, devices=(first,)))
    return out


def _check_new_devices(devices: Iterable[Device], p: Person, version: int, signer: str) -> None:
    for d in devices:
        if d.added_at != version or d.approved_by != signer:
            raise malformed_roster(
                f"new device {d.kid} of {p.name!r} must have added_at {version} and "
                f"approved_by {signer} (the roster's signer)"
            )
        if p.removed_at is not None:
            raise malformed_roster(f"removed member {p.id} gets a new device {d.kid}")


def _check_removed_now(p: Person, version: int) -> None:
    if p.removed_at != version:
        raise malformed_roster(
            f"member {p.id} is removed at v{p.removed_at}, not at this version {version}"
        )


def key_owners(members: Iterable[Any]) -> dict[str, tuple[str, str, str]]:
    """Every key of a roster body's ``members`` (v1 or v2, as stored: verified before it
    was saved) -> (member id, member name, the name that shows the device: "alice
    (laptop)" for a member with several devices, else the member's name).  A v1 member
    is its own one device."""
    out: dict[str, tuple[str, str, str]] = {}
    for m in members:
        if "devices" in m:
            several = len(m["devices"]) > 1
            for d in m["devices"]:
                shown = f"{m['name']} ({d['name']})" if several else str(m["name"])
                out[str(d["kid"])] = (str(m["id"]), str(m["name"]), shown)
        else:
            out[str(m["kid"])] = (str(m["kid"]), str(m["name"]), str(m["name"]))
    return out
