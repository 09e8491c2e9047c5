"""``sealmem device``: sync your own machines (SPEC.md "Devices and identity").

``device add NAME`` on a device that is already in the team prints a device invite;
``device join CODE`` on the new machine posts a device join request; an admin
approves it with ``sealmem admin approve`` (in a team of one, you, on the old
machine).  ``device list`` shows your devices, ``device revoke NAME`` (an admin)
takes one away and rotates the keys it could read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..clock import now_ms
from . import output
from .memory import JsonOpt
from .team import open_team

__all__ = ["device_app", "register"]

device_app = typer.Typer(rich_markup_mode=None, help="Your devices: add, join, list, revoke.")


def add(
    name: Annotated[str, typer.Argument(help="A name for the new device, e.g. desktop.")],
    as_json: JsonOpt = False,
) -> None:
    """Print a device invite (valid one day) for a new machine of yours."""
    from ..team.devices import invite_device

    with open_team() as team:
        line = invite_device(team, name, now_ms())
    if as_json:
        output.emit_json({"invite": line, "name": name})
        return
    output.say(line)
    output.say(
        "on the new machine run: sealmem device join <the line above>; then an admin "
        "(you, in a team of one) runs 'sealmem admin requests' and 'sealmem admin approve'",
        err=True,
    )


def join(
    code: Annotated[str, typer.Argument(metavar="CODE", help="The line 'device add' printed.")],
    folder: Annotated[
        Path | None, typer.Option("--folder", help="Where the shared folder is mounted here.")
    ] = None,
    hub: Annotated[
        str | None, typer.Option("--hub", help="The hub URL, if it differs from the invite's.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """On the new machine: check the device invite, make this device's keys, post the
    request an admin approves."""
    from ..identity import load_member_key
    from ..paths import ensure_home
    from ..team.devices import join_device, read_device_invite_text
    from ..team.invite import fingerprint_of

    home = ensure_home()
    invite, data = read_device_invite_text(code, now=now_ms())
    key = load_member_key(home)
    join_device(
        home, invite, data, key, folder=None if folder is None else str(folder), hub=hub,
        now=now_ms(),
    )  # fmt: skip
    doc: dict[str, Any] = {
        "team": invite.team,
        "member": invite.member,
        "device": invite.name,
        "kid": key.kid,
        "fingerprint": key.public().fingerprint(),
        "root_fingerprint": fingerprint_of(invite.root_public, invite.root_box_public),
        "request_posted": True,
    }
    if as_json:
        output.emit_json(doc)
        return
    output.say(f"device join request posted for device {invite.name!r} ({key.kid})")
    output.say(
        f"team root fingerprint: {doc['root_fingerprint']}  "
        "<- compare with 'sealmem team status' there"
    )
    output.say(f"this device's fingerprint: {doc['fingerprint']}  <- the admin compares this")
    output.say("once an admin approves it ('sealmem admin approve'), run: sealmem sync")


def list_devices(
    everyone: Annotated[
        bool, typer.Option("--all", help="Every member's devices, not only yours.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Your devices (revoked ones included), and which one this is."""
    from ..team.devices import device_rows

    with open_team() as team:
        team.refresh(team.trusted(), now_ms())
        rows = device_rows(team.roster(), team.me, everyone=everyone)
    if as_json:
        output.emit_json({"devices": [r.to_dict() for r in rows]})
        return
    table = [
        [
            r.member, r.name, r.kid, f"v{r.added_at}",
            "-" if r.revoked_at is None else f"revoked in v{r.revoked_at}",
            "this device" if r.this_device else "",
        ]
        for r in rows
    ]  # fmt: skip
    output.say(output.table(table, ["MEMBER", "DEVICE", "KID", "ADDED", "REVOKED", ""]))


def revoke(
    name: Annotated[str, typer.Argument(help="The device's name or id.")],
    member: Annotated[
        str | None, typer.Option("--member", help="Whose device (default: yours).")
    ] = None,
    keep_data: Annotated[
        bool,
        typer.Option(
            "--keep-data/--drop",
            help="Keep what it published up to its last manifest you accepted (default).",
        ),
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    """Revoke a device (admin): it reads nothing written after; its keys rotate."""
    from ..sync.engine import sync
    from ..team.devices import revoke_device

    with open_team() as team:
        sync(team, push=False)  # pins come from the manifests this admin accepted
        roster, device = revoke_device(team, name, member=member, keep_data=keep_data, now=now_ms())
    doc = {
        "revoked": device.kid, "device": device.device_name, "member": device.name,
        "keep_data": keep_data, "roster_version": roster.version,
    }  # fmt: skip
    if as_json:
        output.emit_json(doc)
        return
    output.say(
        f"revoked device {device.device_name!r} of {device.name} ({device.kid}); rotated keys "
        f"(roster v{roster.version})"
    )


def register(app: typer.Typer) -> None:
    device_app.command()(add)
    device_app.command()(join)
    device_app.command("list")(list_devices)
    device_app.command()(revoke)
    app.add_typer(device_app, name="device")
