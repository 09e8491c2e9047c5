"""Roster changes an admin makes, as pure functions returning the next version.

Each change is an :data:`Edit` of the next version's body; :func:`next_roster`
applies one or several to a roster and returns its successor (``version + 1``,
``prev`` = hash of the current body), checked for consistency, so that one
admin command is one new version however many edits it makes (approving two
members and rotating a project the admin cannot re-wrap, say).

The rules of each change are settled here, once, for every caller (each edit's
docstring says its own).

The caller signs the result (``roster.sign(admin_key)``) and, where an epoch
changed, publishes a new keyring with :func:`sealmem.protocol.keyring.build_keyring`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from .devices import Device, Introduced, Person, upgrade_people
from .errors import InputError, Rejected
from .record import PROJECT_RE
from .roster import Grant, Member, Pin, Reset, Revocation, Roster
from .settings import BOUNDS as _BOUNDS
from .settings import TeamSettings
from .state import TrustedState
from .suite import Suite

__all__ = [
    "Edit",
    "adding_device",
    "adding_member",
    "adding_project",
    "genesis",
    "next_roster",
    "pins_for",
    "resetting_chain",
    "revoking",
    "revoking_device",
    "rotating",
    "setting_grant",
    "setting_periods",
    "upgrading",
]

Edit = Callable[[Roster], Roster]
"""One change of the next version's body: takes the draft (version and ``prev``
already set) and returns it changed.  Raises ``InputError`` when it does not apply."""


def genesis(
    suite: Suite, team: str, root: Member, *, created_at: int, projects: Iterable[str] = ()
) -> Roster:
    """Roster v1: the root admin alone, with read/write on ``projects``."""
    root = replace(root, role="admin")
    names = tuple(dict.fromkeys(projects))
    for name in names:
        _project_name(name)
    return Roster(
        team=team,
        version=1,
        prev=None,
        admins=(root.kid,),
        members=(root,),
        projects=dict.fromkeys(names, 1),
        grants=tuple(Grant(root.kid, p) for p in names),
        created_at=created_at,
    ).check(suite)


def next_roster(suite: Suite, roster: Roster, *edits: Edit, created_at: int) -> Roster:
    """The successor of ``roster`` with ``edits`` applied in order, checked."""
    if not edits:
        raise InputError("a new roster version needs at least one change")
    draft = roster.successor(suite, created_at=created_at)
    for edit in edits:
        draft = edit(draft)
    return draft.check(suite)


def adding_member(
    member: Member,
    *,
    projects: Iterable[str] = (),
    read: bool = True,
    write: bool = True,
    approved_by: str = "",
) -> Edit:
    """Add ``member`` with ``read``/``write`` grants on the registered ``projects``; in a
    v2 roster as a member with one device, approved by ``approved_by`` (the signer)."""
    names = tuple(dict.fromkeys(projects))

    def edit(draft: Roster) -> Roster:
        if draft.member(member.kid) is not None:
            raise InputError(f"member {member.kid} ({member.name}) is already in the roster")
        for name in names:
            _known(draft, name)
        grants = (*draft.grants, *(Grant(member.kid, p, read, write) for p in names))
        admins = (*draft.admins, member.kid) if member.role == "admin" else draft.admins
        if draft.people:
            device = Device(
                member.kid, "device 1", member.sign_public, member.box_public, draft.version,
                approved_by, None, member.issued_by_admin,
            )  # fmt: skip
            person = Person(member.kid, member.name, member.role, (device,))
            return replace(draft, people=(*draft.people, person), grants=grants, admins=admins)
        return replace(draft, members=(*draft.members, member), grants=grants, admins=admins)

    return edit


def upgrading(signer: str, first_listed: Mapping[str, int]) -> Edit:
    """Turn a v1 draft into v2 (SPEC "upgrade"): each member one device, "device 1";
    nothing when the draft is v2 already.  ``first_listed``: kid -> the first version
    that listed it (1 when unknown)."""

    def edit(draft: Roster) -> Roster:
        if draft.people:
            return draft
        revoked = {r.kid: r.at_version for r in draft.revocations}
        people = upgrade_people(draft.members, revoked, signer=signer, first_listed=first_listed)
        return replace(draft, people=people)

    return edit


def adding_device(
    member_id: str,
    *,
    kid: str,
    name: str,
    sign_public: bytes,
    box_public: bytes,
    approved_by: str,
    introduced_by: Introduced | None,
    issued_by_admin: bool = False,
) -> Edit:
    """Append a device to member ``member_id`` of a v2 draft (after :func:`upgrading`)."""

    def edit(draft: Roster) -> Roster:
        person = draft.person(member_id)
        if person is None or person.removed_at is not None:
            raise InputError(f"{member_id} is not a member of the team (or was removed)")
        if draft.member(kid) is not None:
            raise InputError(f"device {kid} is already in the roster")
        device = Device(
            kid, name, sign_public, box_public, draft.version, approved_by, introduced_by,
            issued_by_admin,
        )  # fmt: skip
        grown = replace(person, devices=(*person.devices, device))
        people = tuple(grown if p.id == member_id else p for p in draft.people)
        return replace(draft, people=people)

    return edit


def revoking_device(kid: str, *, pins: Mapping[str, Pin] | None = None) -> Edit:
    """Revoke one device of a member (v2): grants, role and name stay the member's; every
    project the member may read moves to a new epoch (the device held its keys)."""
    kept = dict(pins or {})

    def edit(draft: Roster) -> Roster:
        device = draft.member(kid)
        if device is None or not draft.people:
            raise InputError(f"{kid} is not a device of the roster")
        _active(draft, device.id)
        if (gone := draft.revocation(kid)) is not None:
            raise InputError(f"device {kid} was already revoked in roster v{gone.at_version}")
        live = [m for m in draft.devices_of(device.id) if draft.revocation(m.kid) is None]
        if device.id in draft.admins and draft.admins == (device.id,) and len(live) == 1:
            raise InputError(
                "refusing to revoke the last device of the last admin; add another device "
                "or another admin first"
            )
        readable = {p for p in draft.projects if draft.can_read(kid, p)}
        return replace(
            draft,
            projects={p: e + 1 if p in readable else e for p, e in draft.projects.items()},
            revocations=(*draft.revocations, Revocation(kid, draft.version, kept)),
        )

    return edit


def adding_project(project: str) -> Edit:
    """Register ``project`` at epoch 1; every admin gets read/write on it."""
    _project_name(project)

    def edit(draft: Roster) -> Roster:
        if project in draft.projects:
            raise InputError(f"project {project!r} is already registered")
        return replace(
            draft,
            projects={**draft.projects, project: 1},
            grants=(*draft.grants, *(Grant(kid, project) for kid in draft.admins)),
        )

    return edit


def setting_grant(kid: str, project: str, *, read: bool, write: bool) -> Edit:
    """Set (or with ``read=write=False`` remove) ``kid``'s grant on ``project``.

    Only an active member gets a grant.  Taking read access away does not rotate
    the key by itself; add :func:`rotating` so new snapshots are sealed from it.
    """

    def edit(draft: Roster) -> Roster:
        _known(draft, project)
        _active(draft, kid)
        others = tuple(g for g in draft.grants if (g.kid, g.project) != (kid, project))
        grants = (*others, Grant(kid, project, read, write)) if read or write else others
        return replace(draft, grants=grants)

    return edit


def rotating(project: str) -> Edit:
    """Move ``project`` to the next content-key epoch."""

    def edit(draft: Roster) -> Roster:
        _known(draft, project)
        return replace(draft, projects={**draft.projects, project: draft.projects[project] + 1})

    return edit


def revoking(
    kid: str,
    *,
    pins: Mapping[str, Pin] | None = None,
    device_pins: Mapping[str, Mapping[str, Pin]] | None = None,
) -> Edit:
    """Revoke ``kid``: drop its grants and admin role, rotate every project it could read.

    ``pins`` keeps its manifests up to a seq valid per project (see :func:`pins_for`);
    without a pin for a project, readers drop its versions there
    (:mod:`sealmem.protocol.revocation`).  In a v2 roster every device of the member is
    revoked and the member removed; ``device_pins`` gives each device's pins (default:
    ``pins`` for the member's first device).
    """
    kept = dict(pins or {})
    per_device = {kid: kept, **(device_pins or {})}

    def edit(draft: Roster) -> Roster:
        _active(draft, kid)
        if draft.admins == (kid,):
            raise InputError("refusing to revoke the last admin; add another admin first")
        readable = {p for p in draft.projects if _reads(draft, kid, p)}
        if draft.people:
            return _removing_person(draft, kid, readable, per_device)
        return replace(
            draft,
            admins=tuple(a for a in draft.admins if a != kid),
            members=tuple(replace(m, role="member") if m.kid == kid else m for m in draft.members),
            grants=tuple(g for g in draft.grants if g.kid != kid),
            projects={p: e + 1 if p in readable else e for p, e in draft.projects.items()},
            revocations=(*draft.revocations, Revocation(kid, draft.version, kept)),
        )

    return edit


def _removing_person(
    draft: Roster, member_id: str, readable: set[str], pins: Mapping[str, Mapping[str, Pin]]
) -> Roster:
    """Revoking a member of a v2 roster: every unrevoked device revoked, ``removed_at``."""
    person = draft.person(member_id)
    if person is None:
        raise InputError(f"{member_id} is not a member id of the roster")
    live = [d.kid for d in person.devices if draft.revocation(d.kid) is None]
    gone = replace(person, role="member", removed_at=draft.version)
    return replace(
        draft,
        people=tuple(gone if p.id == member_id else p for p in draft.people),
        admins=tuple(a for a in draft.admins if a != member_id),
        grants=tuple(g for g in draft.grants if g.kid != member_id),
        projects={p: e + 1 if p in readable else e for p, e in draft.projects.items()},
        revocations=(
            *draft.revocations,
            *(Revocation(k, draft.version, dict(pins.get(k, {}))) for k in live),
        ),
    )


def setting_periods(*, review_days: int | None = None, stale_days: int | None = None) -> Edit:
    """Set the team's periods (SPEC "Team settings") in a v2 draft (after :func:`upgrading`);
    a period given as None keeps the value the roster has; out of bounds is refused."""
    try:  # the bounds, checked before any draft
        given = TeamSettings(review_days, stale_days)
    except Rejected as exc:
        limits = ", ".join(f"{n} {lo}..{hi}" for n, (lo, hi) in _BOUNDS.items())
        raise InputError(f"{exc.detail.removeprefix('roster ')}; the bounds are {limits}") from exc

    def edit(draft: Roster) -> Roster:
        if not draft.people:
            raise InputError("team settings need roster v2: apply upgrading() first")
        merged = {**draft.settings.values(), **given.values()}
        if not given:
            raise InputError("give a period to set: review days, stale days or both")
        return replace(draft, settings=TeamSettings(**merged))

    return edit


def resetting_chain(kid: str, project: str) -> Edit:
    """Let ``kid`` start a new manifest chain in ``project`` (after losing its store)."""

    def edit(draft: Roster) -> Roster:
        _known(draft, project)
        if draft.member(kid) is None:
            raise InputError(f"{kid} is not a member of the roster")
        return replace(draft, resets=(*draft.resets, Reset(kid, project, draft.version)))

    return edit


def pins_for(state: TrustedState, kid: str) -> dict[str, Pin]:
    """Pins for every project where ``state`` holds an accepted head of ``kid``."""
    return {p: Pin(h.seq, h.hash) for (w, p), h in state.heads.items() if w == kid}


def _reads(roster: Roster, member_id: str, project: str) -> bool:
    """Whether the member (any of its devices) holds read access to ``project``."""
    g = roster.grant(member_id, project)
    return g is not None and g.read


def _project_name(project: str) -> None:
    if PROJECT_RE.fullmatch(project) is None:
        raise InputError(f"project name {project!r} must match {PROJECT_RE.pattern}")


def _known(roster: Roster, project: str) -> None:
    if project not in roster.projects:
        raise InputError(
            f"project {project!r} is not registered in the roster; "
            "'sealmem admin grant MEMBER PROJECT' registers a new project"
        )


def _active(roster: Roster, kid: str) -> None:
    person = roster.person(kid) if roster.people else None
    if person is not None:  # a member id of v2: active until removed, whatever its devices
        if person.removed_at is not None:
            raise InputError(
                f"{person.name} ({kid}) is not an active member: it was removed in roster "
                f"v{person.removed_at}, and a removed member is never given access again"
            )
        return
    member = roster.member(kid)
    if member is None:
        raise InputError(f"{kid} is not an active member: it is not in the roster; add it first")
    revocation = roster.revocation(kid)
    if revocation is not None:
        raise InputError(
            f"{member.name} ({kid}) is not an active member: it was revoked in roster "
            f"v{revocation.at_version}, and a revoked key is never given access again"
        )
