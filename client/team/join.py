"""Joining a team: pin the invite's root key, save the team config, post the request.

The member's display name comes from ``--name``, the invite's ``--for`` name, or a
key the admin issued (then from the newest roster that verifies from the invite).
"""

from __future__ import annotations

from pathlib import Path

from ...crypto import SUITE, MemberKey
from ...protocol.errors import InputError, SealmemError
from ...protocol.invite import Invite
from ...protocol.names import name_problem
from ...protocol.state import TrustedState
from ...protocol.verify import accept_roster
from ..sync.hub import is_hub_location
from ..sync.session import CONFIG_FILE, TeamConfig, transport_for
from .invite import make_join_request

__all__ = ["join_location", "join_team"]


def join_location(
    location: str, transport: str, *, folder: str | None, hub: str | None
) -> tuple[str, str]:
    """Where this member reaches the team, and over which transport: the invite's
    (``location``, ``transport``) unless overridden."""
    if folder and hub:
        raise InputError("give either --folder or --hub, not both")
    if hub:
        if not is_hub_location(hub):
            raise InputError(f"hub URL {hub!r} must start with http:// or https://")
        return hub.rstrip("/"), "hub"
    if folder or transport != "hub":
        return str(Path(folder or location).absolute()), "folder"
    return location, "hub"


def join_team(
    home_dir: Path,
    invite: Invite,
    key: MemberKey,
    *,
    name: str | None,
    default_name: str | None = None,
    folder: str | None = None,
    hub: str | None = None,
    post_request: bool = True,
    now: int,
) -> TeamConfig:
    """Pin the invite's root key, save the team config and (unless the admin issued our
    key) leave a join request in the team folder.

    The display name is ``name``, else the invite's ``--for`` name, else
    ``default_name``.  A key the admin issued (``post_request=False``) is already in
    the roster under the name it was issued for: that name is taken from the
    verified roster (a different ``name`` is refused).
    """
    if (Path(home_dir) / CONFIG_FILE).exists():
        raise InputError(f"this sealmem home ({home_dir}) is already in a team")
    location, transport_kind = join_location(
        invite.location, invite.transport, folder=folder, hub=hub
    )
    if not post_request:
        issued = _issued_name(invite, key, location, transport_kind)
        if issued is None:  # nothing is posted: a wrong place would "join" unnoticed
            raise InputError(
                f"no roster at {location} that verifies from the invite names this key "
                f"({key.kid}): check --folder/--hub (unreachable, or not this team's), or "
                "ask the admin to sync after 'admin issue'; nothing was saved"
            )
        if name is not None and name != issued:
            raise InputError(
                f"this key was issued for {issued!r}: join without --name (or with "
                f"--name {issued!r}); the admin changes names"
            )
        name = issued
    name = name or invite.for_name or default_name
    if name is None:
        raise InputError("give your display name with --name")
    if problem := name_problem(name):
        raise InputError(f"your display name {name!r} {problem}; choose another with --name")
    if post_request and invite.for_name is not None and name != invite.for_name:
        raise InputError(
            f"this invite is for {invite.for_name!r}: join with --name {invite.for_name!r}, "
            "or ask the admin for an invite for you"
        )
    config = TeamConfig(
        team=invite.team,
        root_public=invite.root_public,
        root_box_public=invite.root_box_public,
        location=location,
        name=name,
        transport=transport_kind,
    )
    if post_request:
        request = make_join_request(
            key, team=invite.team, name=name, invite_id=invite.invite_id, now=now
        )
        transport = transport_for(config, key)
        try:
            transport.post_request(key.kid, request)
        finally:
            transport.close()
    config.save(home_dir)
    return config


def _issued_name(invite: Invite, key: MemberKey, location: str, kind: str) -> str | None:
    """The name ``key`` has in the team's newest roster that verifies from the invite's root
    key, or None when the transport holds none naming it (or cannot be reached)."""
    config = TeamConfig(
        invite.team, invite.root_public, invite.root_box_public, location, "-", kind
    )
    state = TrustedState.pin(SUITE, invite.team, invite.root_public)
    try:
        transport = transport_for(config, key)
    except SealmemError:
        return None
    try:
        for data in transport.rosters(0):
            state, _ = accept_roster(SUITE, state, data)
    except SealmemError:  # unreachable, or a broken chain: keep what verified so far
        pass
    finally:
        transport.close()
    member = None if state.roster is None else state.roster.member(key.kid)
    return None if member is None else member.name
