"""``sealmem team``: create a team, invite, join, and show the team's status.

Fingerprints are printed at invite, join and approve: compare them out of band
(voice, chat) before trusting the other side, since the folder is untrusted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...protocol.errors import InputError
from ..clock import now_ms
from . import output
from .memory import JsonOpt, open_store, resolve_project

if TYPE_CHECKING:
    from ..sync.session import Team

__all__ = ["open_team", "parse_duration", "passphrase_for", "team_app"]

team_app = typer.Typer(
    rich_markup_mode=None, help="Create or join a team and see its members and your access."
)


@contextmanager
def open_team() -> Iterator[Team]:
    """The team of the current ``SEALMEM_HOME``, with its store open, for one command."""
    from ..identity import load_member_key
    from ..paths import ensure_home
    from ..sync.session import Team

    home = ensure_home()
    key = load_member_key(home)
    with open_store() as store:
        team = Team.open(home, store, key)
        try:
            yield team
        finally:
            team.transport.close()


def _login_name() -> str:
    """The display name a member gets when it gives none: its login name."""
    import getpass

    try:
        name = getpass.getuser().strip()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER in a container
        name = ""
    return name[:64] or "member"


def passphrase_for(what: str, *, confirm: bool = False) -> str:
    """A passphrase from ``$SEALMEM_PASSPHRASE`` or a hidden prompt (never from argv)."""
    from ..identity import PASSPHRASE_ENV

    value = os.environ.get(PASSPHRASE_ENV)
    if value:
        return value
    if not sys.stdin.isatty():  # getpass would warn "can not control echo" and read anyway
        line = sys.stdin.readline().rstrip("\r\n")
        if not line:
            raise InputError(
                f"no passphrase for {output.clean(what)}: there is no terminal to ask on; set "
                f"{PASSPHRASE_ENV} or pipe it on stdin"
            )
        return line
    prompt = f"passphrase for {output.clean(what)}"
    return str(typer.prompt(prompt, hide_input=True, confirmation_prompt=confirm))


@team_app.command()
def create(
    name: Annotated[str, typer.Argument(help="A name for the team (an id is derived from it).")],
    folder: Annotated[
        Path | None, typer.Option("--folder", help="The shared folder everyone reaches.")
    ] = None,
    hub: Annotated[
        str | None,
        typer.Option("--hub", help="The hub URL everyone reaches (instead of a folder)."),
    ] = None,
    operator_token: Annotated[
        str | None,
        typer.Option(
            "--operator-token",
            envvar="SEALMEM_HUB_OPERATOR_TOKEN",
            help="The hub operator's registration token (or $SEALMEM_HUB_OPERATOR_TOKEN).",
        ),
    ] = None,
    project: Annotated[
        list[str] | None,
        typer.Option("--project", "-p", help="Team project (repeatable; default: current)."),
    ] = None,
    me: Annotated[str, typer.Option("--name", help="Your display name in the roster.")] = "admin",
    as_json: JsonOpt = False,
) -> None:
    """Create a team in a shared folder or on a hub: your key becomes its root admin key."""
    from .. import SHARED_PROJECT
    from ..identity import load_member_key
    from ..paths import ensure_home
    from ..team.admin import create_team

    home = ensure_home()
    key = load_member_key(home)
    projects = [*(project or [resolve_project(None)]), SHARED_PROJECT]
    with open_store() as store:
        team = create_team(
            home, store, key, name=name, folder=None if folder is None else str(folder),
            hub=hub, operator_token=operator_token, projects=projects,
            admin_name=me, now=now_ms(),
        )  # fmt: skip
        team.transport.close()
        doc = {
            "team": team.config.team,
            "transport": team.config.transport,
            "location": team.config.location,
            "folder": team.config.location,
            "projects": sorted(team.roster().projects),
            "root_kid": key.kid,
            "root_fingerprint": team.config.root_fingerprint,
        }
    if as_json:
        output.emit_json(doc)
        return
    where = "on hub" if doc["transport"] == "hub" else "in"
    output.say(f"created team {doc['team']} {where} {doc['location']}")
    output.say(f"projects: {', '.join(doc['projects'])}")
    output.say(f"root key fingerprint: {doc['root_fingerprint']}")
    output.say("next: sealmem team invite   (hand the invite to a teammate)")


_DURATION_UNITS = {"d": 86_400_000, "h": 3_600_000, "m": 60_000}


def parse_duration(text: str) -> int:
    """``7d``, ``12h`` or ``90m`` in milliseconds; :class:`InputError` for anything else."""

    value = text.strip().lower()
    number, unit = value[:-1], value[-1:]
    if unit not in _DURATION_UNITS or not number.isdigit() or int(number) == 0:
        raise InputError(
            f"--expires {text!r} is not a duration: write a whole number of days, hours or "
            "minutes such as 7d, 12h or 90m"
        )
    return int(number) * _DURATION_UNITS[unit]


@team_app.command()
def invite(
    expires: Annotated[
        str,
        typer.Option("--expires", help="How long the invite is valid (e.g. 7d, 12h; max 30d)."),
    ] = "7d",
    for_name: Annotated[
        str | None,
        typer.Option("--for", help="Single-use invite for this member name only."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print an invite (team id, root key fingerprint, location) to hand to a new member."""
    from ...protocol.invite import DAY_MS, MAX_INVITE_MS
    from ..team import admin
    from ..team.invite import read_invite

    lifetime = parse_duration(expires)
    if lifetime > MAX_INVITE_MS:
        raise InputError(
            f"--expires {expires} is too long: an invite is valid for at most "
            f"{MAX_INVITE_MS // DAY_MS} days"
        )
    with open_team() as team:
        now = now_ms()
        team.refresh(team.trusted(), now)
        text = admin.invite(team, now, lifetime_ms=lifetime, for_name=for_name)
        made = read_invite(text, now=now)
        doc = {
            "invite": text,
            "invite_id": made.invite_id,
            "expires_at": made.expires_at,
            "for": made.for_name,
            "team": team.config.team,
            "root_fingerprint": team.config.root_fingerprint,
            "location": team.config.location,
        }
    if as_json:
        output.emit_json(doc)
        return
    output.say(text)
    output.say(f"\nroot key fingerprint: {doc['root_fingerprint']} (tell the member out of band)")
    who = f" for {for_name} only (single use)" if for_name else ""
    output.say(f"invite {made.invite_id}{who}, valid until {output.format_time(made.expires_at)}")


@team_app.command()
def join(
    invite_text: Annotated[str, typer.Argument(metavar="INVITE", help="The invite line.")],
    me: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="Your display name in the roster (default: the invite's --for name or your "
            "login name; with --key-bundle, the name the key was issued for).",
        ),
    ] = None,
    folder: Annotated[
        Path | None, typer.Option("--folder", help="Where the shared folder is mounted here.")
    ] = None,
    hub: Annotated[
        str | None, typer.Option("--hub", help="The hub URL, if it differs from the invite's.")
    ] = None,
    key_bundle: Annotated[
        Path | None,
        typer.Option("--key-bundle", help="A key bundle from 'sealmem admin issue'."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Join a team: make (or import) your member key and post a join request."""
    from ...crypto import MemberKey
    from ..identity import import_member_key, load_member_key, member_key_path
    from ..paths import ensure_home
    from ..team.invite import read_invite, root_fingerprint
    from ..team.join import join_team

    home = ensure_home()
    inv = read_invite(invite_text, now=now_ms())
    if key_bundle is not None:
        try:
            data = key_bundle.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read the key bundle {key_bundle}: {exc.strerror}") from exc
        bundled = MemberKey.import_bundle(data, passphrase_for("the bundle"))
        fresh = not member_key_path(home).exists()
        key = import_member_key(home, bundled)
    else:
        key, fresh = load_member_key(home), False
    try:
        config = join_team(
            home, inv, key, name=me, default_name=_login_name(),
            folder=None if folder is None else str(folder), hub=hub,
            post_request=key_bundle is None, now=now_ms(),
        )  # fmt: skip
    except BaseException:
        if fresh:  # the bundle's key goes with the failed join: a retry may bring another
            member_key_path(home).unlink(missing_ok=True)
        raise
    me = config.name
    doc: dict[str, Any] = {
        "team": inv.team,
        "name": me,
        "kid": key.kid,
        "fingerprint": key.public().fingerprint(),
        "root_fingerprint": root_fingerprint(inv),
        "invite_id": inv.invite_id,
        "request_posted": key_bundle is None,
    }
    if as_json:
        output.emit_json(doc)
        return
    if key_bundle is None:
        # Not a member yet: the request waits for an admin (DESIGN 4, invite / join).
        output.say(
            "join request posted; waiting for an admin to approve it "
            f"(fingerprint {doc['fingerprint']})"
        )
        output.say(f"team {inv.team}, as {me} ({key.kid})")
    else:
        output.say(f"joined team {inv.team} as {me} ({key.kid}) with the key an admin issued")
    output.say(f"team root fingerprint: {doc['root_fingerprint']}  <- compare with the admin's")
    output.say(f"your fingerprint:      {doc['fingerprint']}  <- the admin compares this")
    if key_bundle is None:
        output.say("once an admin approves it, run: sealmem sync")
    else:
        output.say("key imported; run: sealmem sync")


def grant_rows(doc: dict[str, Any]) -> list[list[str]]:
    """Per project of the roster: who may read it, who may write it (members by name)."""
    names = {m["kid"]: m["name"] + (" (revoked)" if m["revoked"] else "") for m in doc["members"]}
    rows = []
    for project in sorted(doc["my_access"]):
        held = [g for g in doc["grants"] if g["project"] == project]
        readers = sorted(names.get(g["kid"], g["kid"][:12]) for g in held if g["read"])
        writers = sorted(names.get(g["kid"], g["kid"][:12]) for g in held if g["write"])
        rows.append([project, ", ".join(readers) or "-", ", ".join(writers) or "-"])
    return rows


@team_app.command()
def status(as_json: JsonOpt = False) -> None:
    """Roster version, members, grants, your access, what stays local, last sync, alarms."""

    with open_team() as team:
        team.refresh(team.trusted(), now_ms())
        doc = team.status()
    if as_json:
        output.emit_json(doc)
        return
    output.say(f"team {doc['team']} (roster v{doc['roster_version']}) at {doc['location']}")
    output.say(f"me: {doc['me']['name']} {doc['me']['kid']}  fingerprint {doc['my_fingerprint']}")
    rows = [
        [
            m["name"] + (" (revoked)" if m["revoked"] else ""),
            m["kid"],
            m["role"],
            m["fingerprint"],
            output.format_time(m["last_published_at"]),
        ]
        for m in doc["members"]
    ]
    if rows:
        output.say("\n" + output.table(rows, ["MEMBER", "KID", "ROLE", "FINGERPRINT", "LAST SYNC"]))
    if grants := grant_rows(doc):
        output.say("\n" + output.table(grants, ["PROJECT", "MAY READ", "MAY WRITE"]))
    access = [
        [p, "read" if a["read"] else "-", "write" if a["write"] else "-", str(a["epoch"])]
        for p, a in doc["my_access"].items()
    ]
    if access:
        output.say("\n" + output.table(access, ["PROJECT", "READ", "WRITE", "EPOCH"]))
    if doc["local_only"]:
        output.say("\nyour team memories that stay on this machine:")
        for item in doc["local_only"]:
            output.say(f"  {item['project']}: {item['count']} ({item['why']}); {item['fix']}")
    last = doc["last_sync"]
    if last:
        when = output.format_time(last["finished_at"])
        output.say(f"\nlast sync {when}: {last['summary']['summary']}")
    for alarm in doc["alarms"]:
        output.say(f"ALARM: {alarm}")
