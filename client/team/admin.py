"""Admin operations (DESIGN §4): create a team, approve, issue, grant, revoke, rotate, reset.

Every change is one new roster version, signed by this member's admin key.  A
change that only adds readers (approve, issue, a read grant) re-publishes the
project's current keyring with wraps for the new readers (same epoch, same
key); one that removes a reader (revoke, a grant taken back) or ``admin
rotate`` starts a new epoch with a fresh content key.  An admin that cannot
unwrap the current key falls back to a new epoch.  A new reader is also wrapped
every older epoch of its projects this admin holds (the older keyrings are
re-published citing the new roster), so it reads what the team already wrote;
``from_now`` wraps only the current epoch, and :func:`missing_history` names the
older epochs this admin cannot unwrap.  Keyrings are published before the roster
that names their epoch, so a reader who sees the roster finds its keyrings.
Before changing anything the admin refreshes its roster from the transport, so
it always extends the newest version.
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...crypto import KDF_MODERATE, SUITE, ContentKey, KdfLimits, MemberKey
from ...protocol import admin as edits
from ...protocol.admission import check_request_against_invite
from ...protocol.errors import InputError, Rejected
from ...protocol.invite import DEFAULT_INVITE_MS
from ...protocol.keyring import Keyring, build_keyring, extend_keyring
from ...protocol.names import id_like, name_problem
from ...protocol.roster import Member, Roster
from ...protocol.state import TrustedState
from ...protocol.verify import accept_keyring, accept_roster
from ..paths import sanitize_project
from ..store.connection import transaction
from ..sync import replica
from ..sync.hub import is_hub_location
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
from .registry import load_registry, update_registry
from .session import Team, TeamConfig, find_member, transport_for, trusted_roster

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
    "review_requests",
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


def _publish(
    team: Team,
    state: TrustedState,
    roster: Roster,
    rekey: Iterable[str],
    now: int,
    *,
    extend: Iterable[str] = (),
    history: Mapping[str, Collection[str]] | None = None,
) -> Roster:
    """Sign and publish ``roster`` with new keyrings for ``rekey``, the current key
    re-wrapped to the readers of ``roster`` for ``extend``, and every older epoch this
    admin holds re-wrapped to the kids ``history`` names per project; trust them
    locally (the store then holds the new state: :meth:`Team.trusted` reads it back)."""
    roster = roster.check(SUITE)
    keys = {p: ContentKey.generate() for p in set(rekey)}
    for project in set(extend) - keys.keys():
        key = _current_key(team, state, roster, project)
        if key is None:
            raise InputError(
                f"cannot re-wrap the key of {project!r}: this admin holds none; "
                "rotate the project instead ('sealmem admin rotate')"
            )
        keys[project] = key
    keyrings = []
    for project in sorted(keys):
        keyring = build_keyring(keys[project], roster, project)
        keyrings.append((project, keyring.epoch, keyring.sign(team.key)))
    for project, kids in sorted((history or {}).items()):
        for keyring in _older_keyrings(team, state, roster, project, kids):
            keyrings.append((project, keyring.epoch, keyring.sign(team.key)))
    roster_bytes = roster.sign(team.key)
    for project, epoch, data in keyrings:
        team.transport.put_keyring(project, epoch, data)
    team.transport.put_roster(roster.version, roster_bytes)
    state, _ = accept_roster(SUITE, state, roster_bytes)
    with transaction(team.conn):
        replica.save_roster(team.conn, roster.version, roster_bytes, now)
        for project, epoch, data in keyrings:
            if roster.can_read(team.me, project):
                state, _ = accept_keyring(SUITE, state, data)
                replica.save_keyring(team.conn, project, epoch, data, now)
    return roster


def _admin_roster(team: Team, now: int) -> tuple[TrustedState, Roster]:
    """The refreshed trusted state and its roster, which must name this member an admin."""
    state, _ = team.refresh(team.trusted(), now)
    roster = trusted_roster(state)
    if not roster.is_admin(team.me):
        raise InputError(
            f"member {team.me} is not an admin of team {team.config.team} "
            f"(roster v{roster.version}); ask an admin to run this command"
        )
    return state, roster


def _current_key(
    team: Team, state: TrustedState, roster: Roster, project: str
) -> ContentKey | None:
    """This admin's key for ``project``'s epoch in ``roster``, if it holds a valid one."""
    epoch = roster.projects.get(project)
    if epoch is None:
        return None
    try:
        return team.content_key(state, project, epoch)
    except Rejected:  # a wrap that does not match key_id: never re-wrap it
        return None


def _older_epochs(state: TrustedState, roster: Roster, project: str) -> list[int]:
    """The epochs ``project`` had before its epoch in ``roster``, oldest first."""
    current = roster.projects.get(project)
    if current is None:
        return []
    seen = {r.projects[project] for r in state.rosters.values() if project in r.projects}
    seen |= {epoch for (p, epoch) in state.keyrings if p == project}
    return sorted(e for e in seen if e < current)


def _older_key(team: Team, state: TrustedState, project: str, epoch: int) -> ContentKey | None:
    try:
        return team.content_key(state, project, epoch)
    except Rejected:  # a wrap that does not match key_id: never re-wrap it
        return None


def _older_keyrings(
    team: Team, state: TrustedState, roster: Roster, project: str, kids: Collection[str]
) -> list[Keyring]:
    """Each older epoch of ``project`` this admin holds, re-published citing ``roster``
    and wrapped to ``kids`` too (an epoch where they all hold a wrap already is left
    as it is); epochs this admin cannot unwrap are skipped (:func:`missing_history`)."""
    out: list[Keyring] = []
    for epoch in _older_epochs(state, roster, project):
        known = state.keyring(project, epoch)
        key = _older_key(team, state, project, epoch)
        if known is None or key is None or set(kids) <= set(known.wraps):
            continue
        out.append(extend_keyring(known, key, roster, sorted(kids)))
    return out


def missing_history(team: Team, projects: Iterable[str] | None = None) -> dict[str, list[int]]:
    """Per project, the older epochs this admin cannot wrap to a new reader (it holds
    no valid key for them): members it adds do not read what was written under them.

    ``projects`` defaults to every project of the trusted roster.
    """
    state = team.trusted()
    roster = trusted_roster(state)
    gaps: dict[str, list[int]] = {}
    for project in sorted(roster.projects if projects is None else set(projects)):
        if project not in roster.projects:
            continue
        epochs = _older_epochs(state, roster, project)
        lost = [e for e in epochs if _older_key(team, state, project, e) is None]
        if lost:
            gaps[project] = lost
    return gaps


def _added_readers(
    team: Team, state: TrustedState, roster: Roster, projects: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Split projects that gain readers into (extend the current epoch, rotate).

    Extending needs the current key, so a project this admin cannot unwrap (or a
    new one) gets a new epoch instead.
    """
    extend: list[str] = []
    rotate: list[str] = []
    for project in sorted(set(projects)):
        has_key = _current_key(team, state, roster, project) is not None
        (extend if has_key else rotate).append(project)
    return extend, rotate


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
        _publish(team, TrustedState.pin(SUITE, team_id, key.sign_public), roster, projects, now)
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


def review_requests(team: Team, now: int) -> list[RequestView]:
    """The waiting join requests, checked against this admin's invites at ``now``."""
    return _inbox(team, now).views


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
    state, roster = _admin_roster(team, now)
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
    _change(team, state, changes, now, readers_added=granted if read else (), from_now=from_now)
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
    state, roster = _admin_roster(team, now)
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
    _change(team, state, [add], now, readers_added=granted if read else (), from_now=from_now)
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
    state, roster = _admin_roster(team, now)
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
        return _change(team, state, [edits.adding_project(project), setting], now, new=[project])
    old = roster.grant(member.kid, project)
    if old is not None and old.read and not read:  # a reader removed: a new epoch
        return _change(team, state, [setting, edits.rotating(project)], now, new=[project])
    added = [project] if read and (old is None or not old.read) else []
    return _change(team, state, [setting], now, readers_added=added, from_now=from_now)


def revoke(team: Team, who: str, *, keep_data: bool = True, now: int) -> Roster:
    """Revoke a member and rotate every project it could read.

    With ``keep_data`` (the default) its manifests up to the last one this admin
    accepted stay valid (pinned), so readers keep what it published until then;
    without, readers replace its versions with the best remaining version written
    by anyone else (``protocol.revocation``), and drop a memory only it wrote.
    """
    state, roster = _admin_roster(team, now)
    member = find_member(roster, who)
    pins = edits.pins_for(state, member.kid) if keep_data else {}
    readable = [p for p in roster.projects if roster.can_read(member.kid, p)]
    return _change(team, state, [edits.revoking(member.kid, pins=pins)], now, new=readable)


def rotate(team: Team, project: str, *, now: int) -> Roster:
    """Give ``project`` a new epoch (a fresh content key)."""
    state, _ = _admin_roster(team, now)
    return _change(team, state, [edits.rotating(project)], now, new=[project])


def reset_writer(team: Team, who: str, *, now: int) -> Roster:
    """Let a member who lost its store start new manifest chains in every project."""
    state, roster = _admin_roster(team, now)
    member = find_member(roster, who)
    writable = [p for p in roster.projects if roster.can_write(member.kid, p)]
    if not writable:
        raise InputError(f"{member.name} may write no project; nothing to reset")
    resets = [edits.resetting_chain(member.kid, p) for p in writable]
    return _change(team, state, resets, now)


def _change(
    team: Team,
    state: TrustedState,
    changes: Sequence[edits.Edit],
    now: int,
    *,
    new: Iterable[str] = (),
    readers_added: Iterable[str] = (),
    from_now: bool = False,
) -> Roster:
    """One new roster version with ``changes`` (``protocol.admin``), published with keyrings.

    ``new`` projects get a fresh key (their epoch moved, or they were just
    registered); projects in ``readers_added`` re-publish the current key with the
    new readers' wraps, or rotate when this admin cannot unwrap it, and (unless
    ``from_now``) re-publish every older epoch this admin holds with wraps for the
    members who can read the project in the new roster and could not before.
    """
    roster = trusted_roster(state)
    extend, rekey = _added_readers(team, state, roster, set(readers_added) - set(new))
    changes = [*changes, *(edits.rotating(p) for p in rekey)]
    nxt = edits.next_roster(SUITE, roster, *changes, created_at=now)
    history: dict[str, Collection[str]] = {}
    if not from_now:
        for project in set(readers_added):
            before = {m.kid for m in roster.readers(project)}
            added = {m.kid for m in nxt.readers(project)} - before
            if added:
                history[project] = added
    return _publish(team, state, nxt, [*new, *rekey], now, extend=extend, history=history)
