"""Admin operations (DESIGN §4): create a team, invite, review and approve or reject
join requests, issue, grant, revoke, rotate, reset.

Each operation decides its roster edits (``protocol.admin``) and hands them to
:mod:`sealmem.client.team.publish`, which publishes one new roster version with
the keyrings it needs.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...crypto import KDF_MODERATE, SUITE, KdfLimits, MemberKey
from ...protocol import admin as edits
from ...protocol.admission import check_request_against_invite
from ...protocol.errors import InputError, Rejected
from ...protocol.invite import DEFAULT_INVITE_MS
from ...protocol.names import id_like, name_problem
from ...protocol.roster import Member, Roster
from ...protocol.state import TrustedState
from ..project import sanitize_project
from ..sync.hub import is_hub_location
from ..sync.session import Team, TeamConfig, find_member, transport_for
from .inbox import (
    Inbox,
    RejectedLog,
    Shown,
    check_name_free,
    forget_shown,
    load_rejected,
    name_key,
    record_rejected,
    resolve,
    save_shown,
)
from .invite import (
    InviteRecord,
    RequestView,
    classify_requests,
    fingerprint_of,
    make_invite,
    mark_invite_used,
)
from .publish import admin_state, change, missing_history, publish
from .registry import load_registry, update_registry

__all__ = [
    "Approved",
    "ShownPlan",
    "approve",
    "chosen_requests",
    "create_team",
    "grant",
    "invite",
    "issue",
    "missing_history",
    "pending_requests",
    "plan_shown",
    "reject",
    "reset_writer",
    "revoke",
    "rotate",
    "show_requests",
]


@dataclass(frozen=True)
class Approved:
    kid: str
    name: str
    fingerprint: str

    def to_dict(self) -> dict[str, Any]:
        return {"kid": self.kid, "name": self.name, "fingerprint": self.fingerprint}


def create_team(
    home_dir: Path,
    store: Any,
    key: MemberKey,
    *,
    name: str,
    folder: str | None = None,
    hub: str | None = None,
    operator_token: str | None = None,
    projects: Sequence[str],
    admin_name: str,
    now: int,
) -> Team:
    """Create a team in ``folder`` or on ``hub`` with this member's key as the root admin key.

    On a hub, publishing roster v1 registers the team; the hub operator decides who may
    (``operator_token``, or the team id on its allow-list).
    """
    if (Path(home_dir) / "team.json").exists():
        raise InputError(f"this sealmem home ({home_dir}) is already in a team")
    if (folder is None) == (hub is None):
        raise InputError("give exactly one of --folder PATH or --hub URL")
    if problem := name_problem(admin_name):
        raise InputError(f"your display name {admin_name!r} {problem}; choose another with --name")
    slug = sanitize_project(name).replace(".", "-").replace("_", "-")[:50].strip("-")
    team_id = f"{slug or 'team'}-{secrets.token_hex(4)}"
    if len(team_id) < 12:
        team_id = f"team-{team_id}"
    projects = sorted(set(projects))
    if hub is not None and not is_hub_location(hub):
        raise InputError(f"hub URL {hub!r} must start with http:// or https://")
    config = TeamConfig(
        team=team_id,
        root_public=key.sign_public,
        root_box_public=key.box_public,
        location=hub.rstrip("/") if hub is not None else str(Path(str(folder)).absolute()),
        name=admin_name,
        transport="hub" if hub is not None else "folder",
    )
    me = Member(key.kid, admin_name, key.sign_public, key.box_public, "admin", False)
    roster = edits.genesis(SUITE, team_id, me, created_at=now, projects=projects)
    transport = transport_for(config, key, operator_token=operator_token)
    team = Team(Path(home_dir), store, key, config, transport)
    try:
        transport.prepare_new_team()
        publish(team, TrustedState.pin(SUITE, team_id, key.sign_public), roster, projects, now)
    except BaseException:
        transport.close()
        raise
    config.save(home_dir)
    return team


def invite(
    team: Team, now: int, *, lifetime_ms: int = DEFAULT_INVITE_MS, for_name: str | None = None
) -> str:
    """A new invite (recorded in this admin's invite registry), as its text line."""
    if team.me != team.trusted().root_kid:
        raise InputError(
            "an invite is signed by the team root key; ask the admin who created the team"
        )
    text, made = make_invite(
        team.key,
        team=team.config.team,
        location=team.config.location,
        transport=team.config.transport,
        now=now,
        lifetime_ms=lifetime_ms,
        for_name=for_name,
    )
    update_registry(team.home, lambda reg: {**reg, made.invite_id: InviteRecord.of(made)})
    return text


def _inbox(team: Team, now: int) -> Inbox:
    """The waiting requests, checked against this admin's invites at ``now``."""
    waiting = team.transport.requests()
    roster = team.trusted().roster
    views = classify_requests(waiting, load_registry(team.home), roster, team.config.team, now)
    return Inbox.of(waiting, views, roster)


def pending_requests(team: Team, now: int) -> list[dict[str, Any]]:
    """Join requests waiting, checked, with fingerprints (refused ones say why), age and
    name clashes."""
    return _inbox(team, now).to_dicts(now)


def show_requests(team: Team, now: int) -> tuple[list[dict[str, Any]], Shown]:
    """:func:`pending_requests` (each flagged when this admin rejected that key before),
    and record the admissible ones as shown at ``now``: what ``admin approve`` approves
    (:mod:`.inbox`)."""
    inbox = _inbox(team, now)
    rejected = load_rejected(team.home, team=team.config.team)
    shown = Shown(team.config.team, now, {v.kid: inbox.hashes[v.kid] for v in inbox.admissible()})
    save_shown(team.home, shown)
    return inbox.to_dicts(now, rejected), shown


@dataclass(frozen=True)
class ShownPlan:
    """What approving the shown set does now: who is approved, who is left waiting (arrived
    or changed since, rejected since, or refused now) and which shown requests are gone."""

    approve: list[RequestView]
    left: list[RequestView]
    gone: list[str]
    rejected: frozenset[str] = frozenset()
    """Kids of ``left`` that this admin rejected after they were shown."""


def plan_shown(team: Team, shown: Shown, now: int) -> ShownPlan:
    """Match the waiting requests against ``shown`` (:func:`~.inbox.load_shown`)."""
    inbox = _inbox(team, now)
    rejected = load_rejected(team.home, team=team.config.team)
    chosen: list[RequestView] = []
    left: list[RequestView] = []
    again = set()
    for view in inbox.views:
        if view.member:
            continue
        same = shown.requests.get(view.kid) == inbox.hashes.get(view.kid)
        if rejected.after(view.kid, shown.shown_at):
            again.add(view.kid)
            same = False
        (chosen if same and view.refused is None else left).append(view)
    gone = sorted(set(shown.requests) - {v.kid for v in inbox.views})
    return ShownPlan(chosen, left, gone, frozenset(again))


def chosen_requests(team: Team, selectors: Sequence[str], now: int) -> list[RequestView]:
    """The waiting requests ``selectors`` name, as :func:`approve` resolves them (to show
    their fingerprints before approving)."""
    views = _inbox(team, now).views
    chosen: list[RequestView] = []
    for selector in selectors:
        view = resolve(views, selector, admissible=True)
        if view not in chosen:
            chosen.append(view)
    return chosen


def approve(
    team: Team,
    kids: Sequence[str],
    *,
    projects: Sequence[str] | None,
    read: bool,
    write: bool,
    now: int,
    from_now: bool = False,
    rename: str | None = None,
    expect: Shown | None = None,
) -> list[Approved]:
    """Add the members of the join requests ``kids`` names (kids, kid prefixes of 8+
    characters, or names unique among the waiting requests).

    All or nothing.  A request that is refused (SPEC "Admission": an unknown,
    expired, used or mismatched invite, or an invalid request) is never
    approved, nor one whose name looks like a member's or another waiting
    request's, unless ``rename`` gives the one request chosen a new name.  With
    ``expect`` (what ``admin requests`` showed: kid -> request hash, and when), a
    request that was not shown, whose bytes differ, or that this admin rejected
    since is refused; without, a request this admin ever rejected is refused.

    Readers are wrapped every older epoch of their projects this admin holds, so
    they read what the team already wrote; ``from_now`` wraps only the current one.
    """
    if not kids:
        raise InputError(
            "name the join requests to approve (names or ids); 'sealmem admin requests' lists them"
        )
    if rename is not None and len(kids) != 1:
        raise InputError("--as renames one request: approve that one alone")
    if rename is not None and (problem := name_problem(rename)):
        raise InputError(f"the member name {rename!r} {problem}")
    state, roster = admin_state(team, now)
    inbox = _inbox(team, now)
    rejected = load_rejected(team.home, team=team.config.team)
    chosen: list[RequestView] = []
    for selector in kids:
        view = resolve(inbox.views, selector, admissible=True)
        if view not in chosen:
            chosen.append(view)
    granted = sorted(set(projects) if projects else set(roster.projects))
    changes: list[edits.Edit] = []
    done: list[tuple[Approved, str]] = []
    registry = load_registry(team.home)
    for view in chosen:
        req = view.request
        if view.refused is not None or req is None:
            reason, detail = view.refused or ("malformed", "unreadable")
            raise InputError(f"join request {view.kid} is refused ({reason}): {detail}")
        if roster.member(req.kid) is not None:
            raise InputError(f"{req.name} ({req.kid}) is already a member")
        _check_shown(req.name, req.kid, inbox.hashes.get(req.kid), expect, rejected)
        name = rename or req.name
        taken = [a.name for a, _ in done]
        check_name_free(name, req.kid, roster, inbox.views, taken, renamed=rename is not None)
        try:  # two requests in one approval may race for one single-use invite
            check_request_against_invite(req, registry.get(req.invite_id), now)
        except Rejected as exc:
            raise InputError(
                f"join request {view.kid} is refused ({exc.reason}): {exc.detail}"
            ) from exc
        registry = mark_invite_used(registry, req.invite_id, req.kid)
        member = Member(req.kid, name, req.sign_public, req.box_public)
        changes.append(edits.adding_member(member, projects=granted, read=read, write=write))
        done.append((Approved(req.kid, name, str(view.fingerprint)), req.invite_id))
    update_registry(team.home, lambda reg: _mark_all(reg, done))
    change(team, state, changes, now, readers_added=granted if read else (), from_now=from_now)
    for item, _ in done:
        team.transport.remove_request(item.kid)
    return [item for item, _ in done]


def _check_shown(
    name: str, kid: str, digest: str | None, expect: Shown | None, rejected: RejectedLog
) -> None:
    """Refuse a request ``expect`` did not show as it is now, or rejected since."""
    again = "run 'sealmem admin requests' again, compare its fingerprint, then approve"
    if rejected.after(kid, None if expect is None else expect.shown_at):
        raise InputError(
            f"you rejected the join request of {name!r} ({kid}) after it was shown; if it "
            f"was posted again and you mean to let it in: {again}"
        )
    if expect is None:
        return
    if kid not in expect.requests:
        raise InputError(
            f"the join request of {name!r} ({kid}) is not one the last 'sealmem admin "
            f"requests' showed (it arrived since, or another key took that name): {again}"
        )
    if expect.requests[kid] != digest:
        raise InputError(
            f"the join request of {name!r} ({kid}) changed since it was shown: {again}"
        )


def reject(
    team: Team, kids: Sequence[str], *, all_refused: bool = False, now: int
) -> list[RequestView]:
    """Remove the join requests ``kids`` names (as :func:`approve` resolves them) and, with
    ``all_refused``, every refused one and every one of a key that is already a member.

    The rejected requests leave the record of what ``admin requests`` showed, and
    are noted (kid, request hash) so the same request posted again is not approved
    before ``admin requests`` shows it again, flagged (:mod:`.inbox`)."""
    if not kids and not all_refused:
        raise InputError("name the join requests to reject (names or ids), or give --all-refused")
    inbox = _inbox(team, now)
    views = inbox.views
    chosen: list[RequestView] = []
    for selector in kids:
        view = resolve(views, selector)
        if view not in chosen:
            chosen.append(view)
    if all_refused:
        chosen += [v for v in views if (v.refused is not None or v.member) and v not in chosen]
    noted = {v.kid: inbox.hashes[v.kid] for v in chosen if v.kid in inbox.hashes}
    record_rejected(team.home, team=team.config.team, requests=noted, now=now)
    forget_shown(team.home, noted)
    for view in chosen:
        team.transport.remove_request(view.kid)
    return chosen


def _mark_all(
    registry: dict[str, InviteRecord], done: Sequence[tuple[Approved, str]]
) -> dict[str, InviteRecord]:
    for item, invite_id in done:
        registry = mark_invite_used(registry, invite_id, item.kid)
    return registry


def issue(
    team: Team,
    name: str,
    *,
    passphrase: str,
    projects: Sequence[str] | None,
    read: bool,
    write: bool,
    now: int,
    kdf: KdfLimits = KDF_MODERATE,
    from_now: bool = False,
) -> tuple[bytes, Approved]:
    """Generate a member key for ``name``, add it to the roster, return the sealed bundle.

    The roster records that this admin generated the key (``issued_by_admin``).
    Older epochs are wrapped to it as in :func:`approve` unless ``from_now``.
    """
    if len(passphrase) < 8:
        raise InputError("the bundle passphrase must be at least 8 characters")
    if problem := name_problem(name):
        raise InputError(f"the member name {name!r} {problem}")
    state, roster = admin_state(team, now)
    if looks := id_like(name, [m.kid for m in roster.members]):
        raise InputError(
            f"the member name {name!r} reads as the member id {looks}: 'admin grant "
            f"{name}' could mean either; issue the key under another name"
        )
    if same := [m for m in roster.members if name_key(m.name) == name_key(name)]:
        raise InputError(
            f"the member name {name!r} looks like that of member {same[0].name!r} "
            f"({same[0].kid[:8]}); issue the key under another name"
        )
    granted = sorted(set(projects) if projects else set(roster.projects))
    key = MemberKey.generate()
    member = Member(key.kid, name, key.sign_public, key.box_public, "member", True)
    add = edits.adding_member(member, projects=granted, read=read, write=write)
    change(team, state, [add], now, readers_added=granted if read else (), from_now=from_now)
    bundle = key.export_bundle(passphrase, kdf=kdf)
    return bundle, Approved(key.kid, name, fingerprint_of(key.sign_public, key.box_public))


def grant(
    team: Team,
    who: str,
    project: str,
    *,
    read: bool,
    write: bool,
    now: int,
    create: bool = False,
    from_now: bool = False,
) -> Roster:
    """Set ``who``'s access to ``project``.

    A project the roster does not register is refused unless ``create``: then
    it is registered first, every admin gets read/write on it, then ``who`` the
    access asked for; its first key is wrapped to all of them.  A new reader is
    wrapped the older epochs this admin holds too, unless ``from_now``.
    """
    state, roster = admin_state(team, now)
    member = find_member(roster, who)
    setting = edits.setting_grant(member.kid, project, read=read, write=write)
    if project not in roster.projects:
        if not create:
            known = ", ".join(sorted(roster.projects)) or "none"
            raise InputError(
                f"project {project!r} is not registered in roster v{roster.version} "
                f"(projects: {known}); to register it, run "
                f"'sealmem admin grant {who} {project} --create'"
            )
        return change(team, state, [edits.adding_project(project), setting], now, new=[project])
    old = roster.grant(member.kid, project)
    if old is not None and old.read and not read:  # a reader removed: a new epoch
        return change(team, state, [setting, edits.rotating(project)], now, new=[project])
    added = [project] if read and (old is None or not old.read) else []
    return change(team, state, [setting], now, readers_added=added, from_now=from_now)


def revoke(team: Team, who: str, *, keep_data: bool = True, now: int) -> Roster:
    """Revoke a member and rotate every project it could read.

    With ``keep_data`` (the default) its manifests up to the last one this admin
    accepted stay valid (pinned), so readers keep what it published until then;
    without, readers replace its versions with the best remaining version written
    by anyone else (``protocol.revocation``), and drop a memory only it wrote.
    """
    state, roster = admin_state(team, now)
    member = find_member(roster, who)
    pins = edits.pins_for(state, member.kid) if keep_data else {}
    readable = [p for p in roster.projects if roster.can_read(member.kid, p)]
    return change(team, state, [edits.revoking(member.kid, pins=pins)], now, new=readable)


def rotate(team: Team, project: str, *, now: int) -> Roster:
    """Give ``project`` a new epoch (a fresh content key)."""
    state, _ = admin_state(team, now)
    return change(team, state, [edits.rotating(project)], now, new=[project])


def reset_writer(team: Team, who: str, *, now: int) -> Roster:
    """Let a member who lost its store start new manifest chains in every project."""
    state, roster = admin_state(team, now)
    member = find_member(roster, who)
    writable = [p for p in roster.projects if roster.can_write(member.kid, p)]
    if not writable:
        raise InputError(f"{member.name} may write no project; nothing to reset")
    resets = [edits.resetting_chain(member.kid, p) for p in writable]
    return change(team, state, resets, now)
