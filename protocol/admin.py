"""Roster changes an admin makes, as pure functions returning the next version.

Each function takes the current roster and returns its successor (``version
+ 1``, ``prev`` = hash of the current body), already checked for consistency.
The caller signs it (``roster.sign(admin_key)``) and, where an epoch changed,
publishes a new keyring with :func:`sealmem.protocol.keyring.build_keyring`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from .errors import InputError
from .record import PROJECT_RE
from .roster import Grant, Member, Pin, Reset, Revocation, Roster
from .state import TrustedState
from .suite import Suite

__all__ = [
    "add_member",
    "add_project",
    "genesis",
    "pins_for",
    "reset_chain",
    "revoke",
    "rotate",
    "set_grant",
]


def genesis(
    suite: Suite, team: str, root: Member, *, created_at: int, projects: Iterable[str] = ()
) -> Roster:
    """Roster v1: the root admin alone, with read/write on ``projects``."""
    root = replace(root, role="admin")
    names = tuple(projects)
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


def add_member(
    suite: Suite,
    roster: Roster,
    member: Member,
    *,
    created_at: int,
    projects: Iterable[str] = (),
    write: bool = True,
) -> Roster:
    """Add ``member`` with read (and ``write``) grants on ``projects``."""
    if roster.member(member.kid) is not None:
        raise InputError(f"member {member.kid} ({member.name}) is already in the roster")
    names = tuple(projects)
    for name in names:
        _known(roster, name)
    grants = (*roster.grants, *(Grant(member.kid, p, True, write) for p in names))
    admins = (*roster.admins, member.kid) if member.role == "admin" else roster.admins
    return roster.successor(
        suite,
        created_at=created_at,
        members=(*roster.members, member),
        grants=grants,
        admins=admins,
    ).check(suite)


def add_project(suite: Suite, roster: Roster, project: str, *, created_at: int) -> Roster:
    """Register ``project`` at epoch 1; every admin gets read/write on it."""
    _project_name(project)
    if project in roster.projects:
        raise InputError(f"project {project!r} is already registered")
    grants = (*roster.grants, *(Grant(kid, project) for kid in roster.admins))
    return roster.successor(
        suite, created_at=created_at, projects={**roster.projects, project: 1}, grants=grants
    ).check(suite)


def set_grant(
    suite: Suite,
    roster: Roster,
    kid: str,
    project: str,
    *,
    read: bool,
    write: bool,
    created_at: int,
) -> Roster:
    """Set (or with ``read=write=False`` remove) ``kid``'s grant on ``project``.

    Taking read access away does not rotate the key by itself; call
    :func:`rotate` too so that new snapshots are sealed from that member.
    """
    _known(roster, project)
    if roster.member(kid) is None or roster.revocation(kid) is not None:
        raise InputError(f"{kid} is not an active member of the roster")
    others = tuple(g for g in roster.grants if (g.kid, g.project) != (kid, project))
    grants = (*others, Grant(kid, project, read, write)) if read or write else others
    return roster.successor(suite, created_at=created_at, grants=grants).check(suite)


def rotate(suite: Suite, roster: Roster, project: str, *, created_at: int) -> Roster:
    """Move ``project`` to the next content-key epoch."""
    _known(roster, project)
    projects = {**roster.projects, project: roster.projects[project] + 1}
    return roster.successor(suite, created_at=created_at, projects=projects).check(suite)


def revoke(
    suite: Suite,
    roster: Roster,
    kid: str,
    *,
    created_at: int,
    pins: Mapping[str, Pin] | None = None,
) -> Roster:
    """Revoke ``kid``: drop its grants and admin role, rotate every project it could read.

    ``pins`` keeps its manifests up to a seq valid per project (see :func:`pins_for`).
    Publish a keyring for each rotated project afterwards.
    """
    member = roster.member(kid)
    if member is None or roster.revocation(kid) is not None:
        raise InputError(f"{kid} is not an active member of the roster")
    if roster.admins == (kid,):
        raise InputError("refusing to revoke the last admin; add another admin first")
    readable = [p for p in roster.projects if roster.can_read(kid, p)]
    version = roster.version + 1
    return roster.successor(
        suite,
        created_at=created_at,
        admins=tuple(a for a in roster.admins if a != kid),
        members=tuple(replace(m, role="member") if m.kid == kid else m for m in roster.members),
        grants=tuple(g for g in roster.grants if g.kid != kid),
        projects={p: e + 1 if p in readable else e for p, e in roster.projects.items()},
        revocations=(*roster.revocations, Revocation(kid, version, dict(pins or {}))),
    ).check(suite)


def reset_chain(suite: Suite, roster: Roster, kid: str, project: str, *, created_at: int) -> Roster:
    """Let ``kid`` start a new manifest chain in ``project`` (after losing its store)."""
    _known(roster, project)
    if roster.member(kid) is None:
        raise InputError(f"{kid} is not a member of the roster")
    reset = Reset(kid, project, roster.version + 1)
    return roster.successor(suite, created_at=created_at, resets=(*roster.resets, reset)).check(
        suite
    )


def pins_for(state: TrustedState, kid: str) -> dict[str, Pin]:
    """Pins for every project where ``state`` holds an accepted head of ``kid``."""
    return {p: Pin(h.seq, h.hash) for (w, p), h in state.heads.items() if w == kid}


def _project_name(project: str) -> None:
    if PROJECT_RE.fullmatch(project) is None:
        raise InputError(f"project name {project!r} must match {PROJECT_RE.pattern}")


def _known(roster: Roster, project: str) -> None:
    if project not in roster.projects:
        raise InputError(
            f"project {project!r} is not registered in roster v{roster.version}; "
            "register the project in the roster first"
        )
