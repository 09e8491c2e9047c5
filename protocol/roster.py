"""The team roster (DESIGN §4): who is in the team, with which keys and grants.

Fields and rules: SPEC.md "Roster".  :meth:`Roster.from_body` checks the shape and
internal consistency; ``verify.accept_roster`` checks the chain and the signature.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from . import reasons
from .devices import ROLES, Device, Person, check_people, flat_devices, need_role
from .encoding import (
    HEX_HASH_RE,
    b64e,
    exact_keys,
    need_b64,
    need_bool,
    need_dict,
    need_int,
    need_kid,
    need_list,
    need_str,
    object_hash,
)
from .envelope import seal
from .errors import Rejected
from .names import name_problem
from .record import PROJECT_RE
from .roster_entries import Grant, Pin, Reset, Revocation
from .settings import NO_SETTINGS, TeamSettings, malformed_roster
from .suite import Signer, Suite

__all__ = [
    "MAX_MEMBERS",
    "ROLES",
    "ROSTER_FORMAT",
    "ROSTER_V2_FORMAT",
    "TEAM_RE",
    "Grant",
    "Member",
    "Pin",
    "Reset",
    "Revocation",
    "Roster",
]

ROSTER_FORMAT = "sealmem/roster/v1"
ROSTER_V2_FORMAT = "sealmem/roster/v2"
_FORMATS = (ROSTER_FORMAT, ROSTER_V2_FORMAT)
TEAM_RE = re.compile(r"[a-z0-9][a-z0-9-]{2,63}")
MAX_MEMBERS = 4096
_MAX_LIST = 65536
_KEY_SIZE = 32
_T = TypeVar("_T")

_BODY_KEYS = frozenset(
    {
        "format", "team", "version", "prev", "admins", "members", "projects", "grants",
        "revocations", "resets", "created_at",
    }
)  # fmt: skip


def _device_member(p: Person, d: Device) -> Member:
    return Member(
        d.kid, p.name, d.sign_public, d.box_public, p.role, d.issued_by_admin, p.id, d.name
    )


def _each(
    lists: Mapping[str, list[Any]], name: str, parse: Callable[[object, str], _T]
) -> tuple[_T, ...]:
    """Every item of the list ``name``, parsed with its JSON path."""
    return tuple(parse(item, f"roster.{name}[{i}]") for i, item in enumerate(lists[name]))


_MEMBER_KEYS = frozenset({"kid", "name", "sign_public", "box_public", "role", "issued_by_admin"})


@dataclass(frozen=True, slots=True)
class Member:
    """A key as the roster lists it: in v1 a member's one key; in v2 one device, with
    ``member_id`` the member it writes for (its name and role are the member's)."""

    kid: str
    name: str
    sign_public: bytes
    box_public: bytes
    role: str = "member"
    issued_by_admin: bool = False
    member_id: str = ""
    device_name: str = ""

    @property
    def id(self) -> str:
        """The member id: the kid of the member's first device (in v1, the one kid)."""
        return self.member_id or self.kid

    def __post_init__(self) -> None:
        # Every roster is made of these, so no roster can carry a name that would act
        # on a teammate's terminal or hide text (protocol/names.py has the rule).
        if problem := name_problem(self.name):
            raise malformed_roster(f"member name {self.name!r} {problem}")

    def to_wire(self) -> dict[str, Any]:
        return {
            "kid": self.kid,
            "name": self.name,
            "sign_public": b64e(self.sign_public),
            "box_public": b64e(self.box_public),
            "role": self.role,
            "issued_by_admin": self.issued_by_admin,
        }

    @classmethod
    def from_wire(cls, value: object, path: str) -> Member:
        obj = exact_keys(value, _MEMBER_KEYS, path)
        role = need_role(obj["role"], f"{path}.role")
        return cls(
            kid=need_kid(obj["kid"], f"{path}.kid"),
            name=need_str(obj["name"], f"{path}.name"),
            sign_public=need_b64(obj["sign_public"], f"{path}.sign_public", size=_KEY_SIZE),
            box_public=need_b64(obj["box_public"], f"{path}.box_public", size=_KEY_SIZE),
            role=role,
            issued_by_admin=need_bool(obj["issued_by_admin"], f"{path}.issued_by_admin"),
        )


@dataclass(frozen=True, slots=True)
class Roster:
    team: str
    version: int
    prev: str | None
    admins: tuple[str, ...]
    members: tuple[Member, ...]
    projects: Mapping[str, int] = field(default_factory=dict)
    grants: tuple[Grant, ...] = ()
    revocations: tuple[Revocation, ...] = ()
    resets: tuple[Reset, ...] = ()
    created_at: int = 0
    people: tuple[Person, ...] = ()
    """The members of a v2 roster with their devices (empty: a v1 roster, whose
    ``members`` are the keys).  In v2, ``members`` is derived: one per member (the
    first device's keys, ``kid`` = member id); :meth:`member` resolves any device."""
    settings: TeamSettings = NO_SETTINGS
    """The periods the team sets (v2 only; :mod:`.settings`)."""
    _devices: Mapping[str, Member] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.people:
            object.__setattr__(self, "_devices", {m.kid: m for m in self.members})
            return
        flat = flat_devices(self.people)
        keys = {kid: _device_member(p, d) for kid, (p, d) in flat.items()}
        object.__setattr__(self, "_devices", keys)
        # one per member: its first device (check() refuses an id that is not that kid)
        firsts = (keys.get(p.id) or keys[p.devices[0].kid] for p in self.people if p.devices)
        object.__setattr__(self, "members", tuple(firsts))

    @property
    def format(self) -> str:
        return ROSTER_V2_FORMAT if self.people else ROSTER_FORMAT

    def member(self, kid: str) -> Member | None:
        """The key ``kid`` (a v1 member, a v2 device), or None when not listed."""
        return self._devices.get(kid)

    def listed_keys(self) -> tuple[Member, ...]:
        """Every key the roster lists (v2: every device, revoked ones included)."""
        return tuple(self._devices.values())

    def person(self, member_id: str) -> Person | None:
        return next((p for p in self.people if p.id == member_id), None)

    def devices_of(self, member_id: str) -> tuple[Member, ...]:
        """Every key listed for ``member_id`` (revoked ones included), in order."""
        return tuple(m for m in self._devices.values() if m.id == member_id)

    def siblings(self, kid: str) -> frozenset[str]:
        """The kids of every device of ``kid``'s member, ``kid`` included."""
        me = self.member(kid)
        return frozenset({kid} if me is None else {m.kid for m in self.devices_of(me.id)})

    def _active(self, kid: str) -> Member | None:
        m = self.member(kid)
        if m is None or self.revocation(kid) is not None:
            return None
        person = self.person(m.id)
        return None if person is not None and person.removed_at is not None else m

    def is_admin(self, kid: str) -> bool:
        m = self._active(kid)
        return m is not None and m.id in self.admins

    def admin_key(self, signer: str, what: str) -> bytes:
        """The public key of ``signer``, an admin of this roster; else ``not-admin``."""
        member = self.member(signer)
        if member is None or not self.is_admin(signer):
            raise Rejected(
                reasons.NOT_ADMIN, f"{what} is signed by {signer}, not an admin of v{self.version}"
            )
        return member.sign_public

    def grant(self, kid: str, project: str) -> Grant | None:
        m = self.member(kid)
        mid = kid if m is None else m.id
        return next((g for g in self.grants if g.kid == mid and g.project == project), None)

    def can_write(self, kid: str, project: str) -> bool:
        g = self.grant(kid, project)
        return g is not None and g.write

    def can_read(self, kid: str, project: str) -> bool:
        g = self.grant(kid, project)
        return g is not None and g.read and self._active(kid) is not None

    def revocation(self, kid: str) -> Revocation | None:
        return next((r for r in self.revocations if r.kid == kid), None)

    def latest_reset(self, kid: str, project: str) -> Reset | None:
        found = [r for r in self.resets if r.kid == kid and r.project == project]
        return max(found, key=lambda r: r.at_version) if found else None

    def readers(self, project: str) -> tuple[Member, ...]:
        """Keys (v2: devices) a keyring for ``project`` must be wrapped to."""
        return tuple(m for m in self._devices.values() if self.can_read(m.kid, project))

    def to_body(self) -> dict[str, Any]:
        body = self._body()
        if self.settings:  # absent when unset, so a roster that sets none hashes as before
            body["settings"] = self.settings.to_wire()
        return body

    def _body(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "team": self.team,
            "version": self.version,
            "prev": self.prev,
            "admins": list(self.admins),
            "members": [p.to_wire() for p in self.people]
            if self.people
            else [m.to_wire() for m in self.members],
            "projects": {name: {"epoch": e} for name, e in self.projects.items()},
            "grants": [g.to_wire() for g in self.grants],
            "revocations": [r.to_wire() for r in self.revocations],
            "resets": [r.to_wire() for r in self.resets],
            "created_at": self.created_at,
        }

    def hash(self, suite: Suite) -> str:
        return object_hash(suite, "roster", self.to_body())

    def sign(self, signer: Signer) -> bytes:
        """The envelope bytes of this roster, signed by ``signer`` (an admin)."""
        return seal(self.to_body(), "roster", signer)

    @classmethod
    def from_body(cls, body: Mapping[str, Any], suite: Suite) -> Roster:
        """Parse and check a roster body; raise ``Rejected`` (malformed/unknown-format)."""
        if body.get("format") not in _FORMATS:
            raise Rejected(
                reasons.UNKNOWN_FORMAT,
                f"roster format {body.get('format')!r} is not one of {_FORMATS}; "
                "upgrade sealmem if the team uses a newer version",
            )
        v2 = body["format"] == ROSTER_V2_FORMAT
        keys = _BODY_KEYS | ({"settings"} if v2 and "settings" in body else set())
        obj = exact_keys(body, keys, "roster")
        prev = obj["prev"]
        projects: dict[str, int] = {}
        for name, raw in need_dict(obj["projects"], "roster.projects").items():
            need_str(name, "roster.projects key", pattern=PROJECT_RE)
            entry = exact_keys(raw, {"epoch"}, f"roster.projects.{name}")
            projects[name] = need_int(entry["epoch"], f"roster.projects.{name}.epoch", minimum=1)
        lists = {
            name: need_list(obj[name], f"roster.{name}", max_len=limit)
            for name, limit in (
                ("admins", _MAX_LIST),
                ("members", MAX_MEMBERS),
                ("grants", _MAX_LIST),
                ("revocations", _MAX_LIST),
                ("resets", _MAX_LIST),
            )
        }
        people = _each(lists, "members", Person.from_wire) if v2 else ()
        roster = cls(
            people=people,
            team=need_str(obj["team"], "roster.team", pattern=TEAM_RE),
            version=need_int(obj["version"], "roster.version", minimum=1),
            prev=None if prev is None else need_str(prev, "roster.prev", pattern=HEX_HASH_RE),
            admins=_each(lists, "admins", need_kid),
            members=() if v2 else _each(lists, "members", Member.from_wire),
            projects=projects,
            grants=_each(lists, "grants", Grant.from_wire),
            revocations=_each(lists, "revocations", Revocation.from_wire),
            resets=_each(lists, "resets", Reset.from_wire),
            created_at=need_int(obj["created_at"], "roster.created_at"),
            settings=TeamSettings.from_wire(obj["settings"]) if "settings" in obj else NO_SETTINGS,
        )
        roster.check(suite)
        return roster

    def check(self, suite: Suite) -> Roster:
        """Internal consistency; raise ``Rejected('malformed')`` naming the first problem."""
        if (self.version == 1) != (self.prev is None):
            raise malformed_roster("prev must be null exactly for version 1")
        if self.settings and not self.people:
            raise malformed_roster("settings need format sealmem/roster/v2")
        kids = [m.kid for m in self.members]
        if len(set(kids)) != len(kids):
            raise malformed_roster("lists a member twice")
        for m in self.members:
            if suite.kid_from_public(m.sign_public) != m.kid:
                raise malformed_roster(f"member {m.kid} does not match its signing key")
        if self.people:
            check_people(
                suite, self.people, self.version, {r.kid: r.at_version for r in self.revocations}
            )
        removed = {p.id for p in self.people if p.removed_at is not None}
        if not self.admins or len(set(self.admins)) != len(self.admins):
            raise malformed_roster("must list at least one admin, each once")
        for kid in self.admins:
            member = self.member(kid)
            if member is None or member.id != kid or member.role != "admin" or kid in removed:
                raise malformed_roster(f"admin {kid} must be a member with role 'admin'")
        seen: set[tuple[str, str]] = set()
        for g in self.grants:
            holder = self.member(g.kid)
            if holder is None or holder.id != g.kid or g.project not in self.projects:
                raise malformed_roster(
                    f"grant for {g.kid} on {g.project!r} names an unknown member/project"
                )
            if g.kid in removed:
                raise malformed_roster(f"removed member {g.kid} holds a grant on {g.project!r}")
            if (g.kid, g.project) in seen:
                raise malformed_roster(f"grants {g.kid} on {g.project!r} twice")
            seen.add((g.kid, g.project))
        revoked = [r.kid for r in self.revocations]
        if len(set(revoked)) != len(revoked):
            raise malformed_roster("revokes a member twice")
        for r in self.revocations:
            if self.member(r.kid) is None or r.at_version > self.version:
                raise malformed_roster(
                    f"revocation of {r.kid} names an unknown member or a future version"
                )
        for s in self.resets:
            if self.member(s.kid) is None or s.project not in self.projects:
                raise malformed_roster(f"reset for {s.kid} names an unknown member or project")
            if s.at_version > self.version:
                raise malformed_roster(f"reset for {s.kid} names future version {s.at_version}")
        return self

    def successor(self, suite: Suite, *, created_at: int, **changes: Any) -> Roster:
        """The next version: ``version + 1``, ``prev`` = this roster's hash, plus ``changes``."""
        nxt = replace(self, version=self.version + 1, prev=self.hash(suite), created_at=created_at)
        return replace(nxt, **changes)
