"""Admin operations (DESIGN §4): create a team, invite, issue, grant, revoke, rotate,
reset; the join requests (review, approve, reject) are :mod:`.approval`.

Each operation decides its roster edits (``protocol.admin``) and hands them to
:mod:`sealmem.client.team.publish`, which publishes one new roster version with
the keyrings it needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...crypto import KDF_MODERATE, SUITE, KdfLimits, MemberKey
from ...protocol import admin as edits
from ...protocol import hubapi
from ...protocol.admission import InviteRecord
from ...protocol.checkpoint import Checkpoint
from ...protocol.errors import InputError
from ...protocol.invite import DEFAULT_INVITE_MS
from ...protocol.names import id_like, name_problem, name_skeleton
from ...protocol.roster import Member, Roster
from ...protocol.state import TrustedState
from ...protocol.witness import Citation
from ..sync import freshness
from ..sync.hub import is_hub_location
from ..sync.hub_answers import HubError
from ..sync.session import Refusal, Team, TeamConfig, find_member, transport_for
from ..sync.transport import ConflictError
from .approval import Approved, first_listed
from .invite import fingerprint_of, make_invite
from .pending import clear_pending, pending_team_id
from .publish import admin_state, change, publish
from .registry import update_registry

__all__ = [
    "create_team", "grant", "invite", "issue", "reset_writer", "revoke", "rotate", "set_periods",
]  # fmt: skip


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
    projects = sorted(set(projects))
    if hub is not None and not is_hub_location(hub):
        raise InputError(f"hub URL {hub!r} must start with http:// or https://")
    team_id = pending_team_id(home_dir, name)  # the same one again after a failed create
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
    except HubError as exc:
        transport.close()
        if exc.code != hubapi.REGISTRATION_CLOSED:
            raise
        raise InputError(
            f"{exc}; the team id {team_id} is kept: once the operator allows it "
            f"('sealmem hub serve --allow-team {team_id}') or hands you a token, run the same "
            "'sealmem team create' again"
        ) from exc
    except BaseException:
        transport.close()
        raise
    config.save(home_dir)
    clear_pending(home_dir)
    return team


def invite(
    team: Team, now: int, *, lifetime_ms: int = DEFAULT_INVITE_MS, for_name: str | None = None
) -> str:
    """A new invite (recorded in this admin's invite registry), as its text line."""
    if team.me != team.trusted().root_kid:
        raise InputError(
            "an invite is signed by the team root key: run 'team invite' on the device that "
            "created the team (or ask the admin who did)"
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
    ``from_now``: see :mod:`.publish`.
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
    if same := [m for m in roster.members if name_skeleton(m.name) == name_skeleton(name)]:
        raise InputError(
            f"the member name {name!r} looks like that of member {same[0].name!r} "
            f"({same[0].kid[:8]}); issue the key under another name"
        )
    granted = sorted(set(projects) if projects else set(roster.projects))
    key = MemberKey.generate()
    member = Member(key.kid, name, key.sign_public, key.box_public, "member", True)
    add = edits.adding_member(member, projects=granted, read=read, write=write, approved_by=team.me)
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
    access asked for; its first key is wrapped to all of them.  ``from_now``: see
    :mod:`.publish`.
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
    devices = [d.kid for d in roster.devices_of(member.id)]
    pins = {kid: edits.pins_for(state, kid) if keep_data else {} for kid in devices}
    readable = [p for p in roster.projects if (g := roster.grant(member.kid, p)) and g.read]
    revoke = edits.revoking(member.kid, pins=pins[member.kid], device_pins=pins)
    return change(team, state, [revoke], now, new=readable)


def rotate(team: Team, project: str, *, now: int) -> Roster:
    """Give ``project`` a new epoch (a fresh content key)."""
    state, _ = admin_state(team, now)
    return change(team, state, [edits.rotating(project)], now, new=[project])


def reset_writer(team: Team, who: str, *, now: int) -> Roster:
    """Let a member who lost its store start new manifest chains in every project it may
    write, on each of its devices that is not revoked (every device writes its own chain)."""
    state, roster = admin_state(team, now)
    member = find_member(roster, who)
    writable = [p for p in roster.projects if roster.can_write(member.kid, p)]
    if not writable:
        raise InputError(f"{member.name} may write no project; nothing to reset")
    devices = [d.kid for d in roster.devices_of(member.id) if roster.revocation(d.kid) is None]
    if not devices:
        raise InputError(f"every device of {member.name} is revoked; nothing to reset")
    resets = [edits.resetting_chain(kid, p) for kid in devices for p in writable]
    return change(team, state, resets, now)


def set_periods(team: Team, *, review_days: int | None, stale_days: int | None, now: int) -> Roster:
    """Set the team's periods (``protocol.settings``) in a new roster version; a team
    still on roster v1 moves to v2 in the same version, as a first device approval does."""
    state, _ = admin_state(team, now)
    periods = edits.setting_periods(review_days=review_days, stale_days=stale_days)
    return change(team, state, [edits.upgrading(team.me, first_listed(state)), periods], now)


@dataclass
class _Quiet:
    """Where reading the checkpoint reports (a refused one is signed over)."""

    cited: Citation = field(default_factory=Citation)
    refused: list[Refusal] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def checkpoint(
    team: Team, *, now: int, warn_after_ms: int | None = None, stop_after_ms: int | None = None
) -> Checkpoint:
    """Sign and publish a new checkpoint of the team's state now (optionally setting the
    team's warn and stop ages); another admin's racing one is read and signed over once."""
    state, _ = admin_state(team, now)

    def attempt() -> Checkpoint:
        current = freshness.newest(team, state, _Quiet(), now)
        return freshness.resign(
            team, state, current, now, warn_after_ms=warn_after_ms, stop_after_ms=stop_after_ms
        )

    try:
        return attempt()
    except ConflictError:
        return attempt()
