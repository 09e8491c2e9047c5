"""``sealmem admin``: issue, grant, revoke, rotate, reset-writer, checkpoint, settings (join
requests: :mod:`.approval`).

Each command publishes one new roster version signed by your admin key (and new
project keys where readers changed).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ...protocol.errors import InputError
from ...protocol.settings import BOUNDS, DEFAULTS
from ..clock import now_ms
from . import approval, output
from .approval import (
    FromNowOpt,
    ProjectsOpt,
    ReadOpt,
    WriteOpt,
    access,
    access_words,
    history_gaps,
    member_access,
    roster_doc,
    with_shared,
)
from .memory import JsonOpt
from .team import open_team, passphrase_for

__all__ = ["register"]

admin_app = typer.Typer(rich_markup_mode=None, help="Team administration: members, grants, keys.")


def _reads(team: Any, who: str, project: str) -> bool:
    """Whether ``who`` may already read ``project`` in the roster this store trusts."""
    from ..sync.session import find_member

    roster = team.trusted().roster
    if roster is None:
        return False
    try:
        return bool(roster.can_read(find_member(roster, who).kid, project))
    except InputError:  # not a member yet here: the grant itself says what is wrong
        return False


def issue(
    name: Annotated[str, typer.Argument(help="Display name of the new member.")],
    output_file: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the sealed key bundle.")
    ],
    project: ProjectsOpt = None,
    read: ReadOpt = None,
    write: WriteOpt = None,
    from_now: FromNowOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Generate a member's key for them: a passphrase-sealed bundle for 'team join'."""
    from ...crypto.keyfile import write_private_file
    from ..team import admin

    may_read, may_write = member_access(read, write)  # before the passphrase is asked
    secret = passphrase_for(f"{name}'s key bundle", confirm=True)
    with open_team() as team:
        projects = with_shared(team, project)
        bundle, made = admin.issue(
            team, name, passphrase=secret, projects=projects, read=may_read, write=may_write,
            now=now_ms(), from_now=from_now,
        )  # fmt: skip
        write_private_file(output_file, bundle)
        gaps = history_gaps(team, projects, read=may_read, from_now=from_now)
        doc = {"issued": made.to_dict(), "bundle": str(output_file), **roster_doc(team.roster())}
    doc["warnings"] = gaps
    if as_json:
        output.emit_json(doc)
        return
    for note in gaps:
        output.warn(note)
    output.say(f"issued {made.name} ({made.kid}) fingerprint {made.fingerprint}")
    what = access_words(may_read, may_write)
    output.say(f"access: {what} on {', '.join(projects or doc['projects'])}")
    output.say(f"bundle: {output_file} (hand it over with the passphrase, separately)")


def grant(
    member: Annotated[str, typer.Argument(help="Member name or id.")],
    project: Annotated[str, typer.Argument(help="Project (must exist unless --create).")],
    read: ReadOpt = None,
    write: WriteOpt = None,
    from_now: FromNowOpt = False,
    create: Annotated[
        bool, typer.Option("--create", help="Register the project if the team has none.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Set a member's read/write access to a project."""
    from ..team import admin

    read, write = access(read, write)
    with open_team() as team:
        reader = _reads(team, member, project)
        roster = admin.grant(
            team, member, project, read=read, write=write, now=now_ms(), create=create,
            from_now=from_now,
        )  # fmt: skip
        gaps = history_gaps(team, [project], read=read and not reader, from_now=from_now)
        doc: dict[str, Any] = {"member": member, "project": project, "read": read}
        doc.update({"write": write, "warnings": gaps, **roster_doc(roster)})
    if as_json:
        output.emit_json(doc)
        return
    for note in gaps:
        output.warn(note)
    output.say(f"{member} on {project}: read={read} write={write} (roster v{roster.version})")


def revoke(
    member: Annotated[str, typer.Argument(help="Member name or id.")],
    keep_data: Annotated[
        bool,
        typer.Option(
            "--keep-data/--drop-data",
            help="Keep what it published up to the last manifest you accepted (default), "
            "or drop its versions: each memory goes back to the best version someone else "
            "wrote, and one only it wrote moves to history.",
        ),
    ] = True,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="With --drop-data: drop without asking.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Revoke a member and rotate the key of every project it could read."""
    from ..sync.engine import sync
    from ..sync.session import find_member
    from ..team import admin

    with open_team() as team:
        # pins (and the count below) come from the manifests this admin accepted: pull first
        sync(team, push=False)
        if not keep_data:
            _confirm_drop(team, find_member(team.roster(), member), yes=yes)
        roster = admin.revoke(team, member, keep_data=keep_data, now=now_ms())
    doc = {"revoked": member, "keep_data": keep_data, **roster_doc(roster)}
    if as_json:
        output.emit_json(doc)
        return
    output.say(f"revoked {member}; rotated keys (roster v{roster.version})")
    if not keep_data:
        output.say("every member drops its versions on its next sync")
    output.say("note: a revoked member keeps what it already decrypted")


def _confirm_drop(team: Any, target: Any, *, yes: bool) -> None:
    """Say what --drop-data changes in this store; ask (or refuse without a terminal)."""
    from ..sync.dropping import preview_writer

    roster = team.roster()
    preview = preview_writer(team.conn, [d.kid for d in roster.devices_of(target.id)])
    what = (
        f"dropping the versions of {target.name} ({target.kid[:8]}) changes "
        f"{preview.affected} memories in your store: {preview.restored} go back to the best "
        f"version a teammate wrote, {preview.removed} that only {target.name} wrote move to "
        "history; every member's store does the same on its next sync"
    )
    if yes:
        output.say(what, err=True)
        return
    if not sys.stdin.isatty():
        raise InputError(
            f"{what}. Nothing was changed: confirm with --yes (no terminal to ask), "
            "or keep its memories with --keep-data"
        )
    output.say(what, err=True)
    if not typer.confirm("revoke and drop?", default=False, err=True):
        raise typer.Abort()


def rotate(
    project: Annotated[str, typer.Argument(help="The project whose key to rotate.")],
    as_json: JsonOpt = False,
) -> None:
    """Give a project a new content key (a new epoch) for everything written from now on."""
    from ..team import admin

    with open_team() as team:
        roster = admin.rotate(team, project, now=now_ms())
    doc = {"rotated": project, **roster_doc(roster)}
    if as_json:
        output.emit_json(doc)
        return
    output.say(f"{project} is now at epoch {roster.projects[project]} (roster v{roster.version})")


def reset_writer(
    member: Annotated[str, typer.Argument(help="Member name or id.")],
    as_json: JsonOpt = False,
) -> None:
    """Let a member who lost its store start new snapshot chains."""
    from ..team import admin

    with open_team() as team:
        roster = admin.reset_writer(team, member, now=now_ms())
    doc = {"reset": member, **roster_doc(roster)}
    if as_json:
        output.emit_json(doc)
        return
    output.say(f"{member} may start new chains from roster v{roster.version}")


def _hours(value: float | None, what: str) -> int | None:
    if value is None:
        return None
    if not 0.25 <= value <= 24 * 365:
        raise InputError(f"{what} {value:g} hours is out of range; give 0.25 to 8760 hours")
    return int(value * 3_600_000)


def checkpoint(
    warn_after: Annotated[
        float | None,
        typer.Option(help="Hours after which members are told the team state may be stale."),
    ] = None,
    stop_after: Annotated[
        float | None,
        typer.Option(help="Hours after which members stop publishing until a fresh checkpoint."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Sign a fresh checkpoint of the team's state (syncs of admins also do it)."""
    from ..team import admin

    with open_team() as team:
        cp = admin.checkpoint(
            team, now=now_ms(), warn_after_ms=_hours(warn_after, "--warn-after"),
            stop_after_ms=_hours(stop_after, "--stop-after"),
        )  # fmt: skip
    doc = {
        "checkpoint": cp.seq,
        "roster_version": cp.roster_version,
        "warn_after_hours": cp.warn_after_ms / 3_600_000,
        "stop_after_hours": cp.stop_after_ms / 3_600_000,
    }
    if as_json:
        output.emit_json(doc)
        return
    output.say(
        f"checkpoint {cp.seq} signed for roster v{cp.roster_version}; members are told after "
        f"{doc['warn_after_hours']:g} h and stop publishing after {doc['stop_after_hours']:g} h "
        "without a newer one"
    )


def _bounds(name: str) -> str:
    """ "0..365; default 7": a period's bounds and default, as ``protocol.settings`` has them."""
    (low, high), default = BOUNDS[name], DEFAULTS[name]
    return f"{low}..{high}; default {default}"


def settings(
    review_days: Annotated[
        int | None,
        typer.Option(
            help=f"Days a member approved later stays in review ({_bounds('review_days')})."
        ),
    ] = None,
    stale_days: Annotated[
        int | None,
        typer.Option(
            help="Days without confirmation after which a memory is stale "
            f"({_bounds('stale_days')})."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the team's periods, or set them for every member (a person's own wins)."""
    from ..team import admin

    with open_team() as team:
        if review_days is None and stale_days is None:
            roster = team.trusted().roster
            if roster is None:
                raise InputError("no trusted roster yet: run 'sealmem sync' first")
        else:
            roster = admin.set_periods(
                team, review_days=review_days, stale_days=stale_days, now=now_ms()
            )
    team_values = roster.settings.values()
    doc: dict[str, Any] = {
        name: {"days": roster.settings.effective(name), "set": name in team_values}
        for name in DEFAULTS
    }
    doc["roster_version"] = roster.version
    if as_json:
        output.emit_json(doc)
        return
    # the names 'sealmem trust period' and 'sealmem review period' give them
    labels = (("review_days", "trust review period"), ("stale_days", "review (stale) period"))
    for name, what in labels:
        days, set_here = doc[name]["days"], doc[name]["set"]
        output.say(f"{what}: {days} days ({'team setting' if set_here else 'default'})")
    output.say(f"roster v{roster.version}; a member's own period on its machine wins")


def register(app: typer.Typer) -> None:
    approval.register(admin_app)
    admin_app.command()(issue)
    admin_app.command()(grant)
    admin_app.command()(revoke)
    admin_app.command()(rotate)
    admin_app.command("reset-writer")(reset_writer)
    admin_app.command()(checkpoint)
    admin_app.command()(settings)
    app.add_typer(admin_app, name="admin")
