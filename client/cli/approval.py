"""``sealmem admin requests``, ``approve``, ``reject``: join requests, as an admin sees them.

``requests`` shows them with fingerprints and records what it showed;
``approve`` without names approves exactly that, as it was shown.  The access
options (``--project``, ``--read``, ``--write``, ``--from-now``) are shared with
``admin issue`` and ``admin grant``.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from ...protocol.errors import InputError
from ..clock import now_ms
from ..sync.clockhealth import span
from . import output
from .memory import JsonOpt
from .team import open_team

__all__ = [
    "FromNowOpt",
    "ProjectsOpt",
    "ReadOpt",
    "WriteOpt",
    "access",
    "access_words",
    "history_gaps",
    "member_access",
    "register",
    "roster_doc",
    "with_shared",
]

ProjectsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--project",
        "-p",
        help="Project to grant (repeatable; default: all). The team's 'shared' project, "
        "which recall always includes, comes with any.",
    ),
]
ReadOpt = Annotated[
    bool | None,
    typer.Option(
        "--read/--no-read", help="May read (--read alone: read only).", show_default=False
    ),
]
WriteOpt = Annotated[
    bool | None,
    typer.Option(
        "--write/--no-write", help="May write (default: read and write).", show_default=False
    ),
]
FromNowOpt = Annotated[
    bool,
    typer.Option(
        "--from-now",
        help="Wrap only the current epoch: a new reader does not read what was written "
        "before the last rotation (default: it is wrapped every older epoch you hold).",
    ),
]


def access(read: bool | None, write: bool | None) -> tuple[bool, bool]:
    """``(read, write)`` from the two flags: neither given is read and write; ``--read``
    alone is read only (not read and a write nobody asked for); ``--write`` alone is
    read and write; ``--no-write`` alone is read only; ``--no-read`` alone is nothing."""
    if read is None and write is None:
        return True, True
    if write is None:
        return bool(read), False
    return (True if read is None else read), write


def member_access(read: bool | None, write: bool | None) -> tuple[bool, bool]:
    """:func:`access` for a new member (``issue``, ``approve``): ``--no-read`` alone would
    make one who can neither read nor write, so it is refused with the two ways on;
    ``--no-read --no-write`` says it on purpose."""
    if read is False and write is None:
        raise InputError(
            "--no-read alone makes a member who can neither read nor write; nothing was "
            "changed: give --no-read --write for write only, or --no-read --no-write for "
            "no access on purpose (then 'sealmem admin grant NAME PROJECT' later)"
        )
    return access(read, write)


def access_words(read: bool, write: bool) -> str:
    """What a grant allows, for people."""
    if read:
        return "read and write" if write else "read"
    return "write only" if write else "no access"


def with_shared(team: Any, projects: list[str] | None) -> list[str] | None:
    """``--project`` as given plus the team's ``shared`` project (recall always reads it,
    so a member granted one project without it would miss the team-wide memories);
    None (every project) when none is given."""
    from .. import SHARED_PROJECT

    if not projects or SHARED_PROJECT in projects:
        return projects
    registered = team.trusted().roster
    if registered is None or SHARED_PROJECT not in registered.projects:
        return projects
    return [*projects, SHARED_PROJECT]


def roster_doc(roster: Any) -> dict[str, Any]:
    return {"roster_version": roster.version, "projects": dict(roster.projects)}


def history_gaps(team: Any, projects: list[str] | None, *, read: bool, from_now: bool) -> list[str]:
    """Warnings naming the older epochs this admin could not wrap to a new reader."""
    from ..team.publish import missing_history

    if not read or from_now:
        return []
    return [
        f"epoch(s) {', '.join(map(str, epochs))} of {project!r} were not wrapped to the new "
        "readers: you hold no key for them. What was written under them stays unreadable "
        "to the new readers until its writers re-publish under the current epoch (at their "
        "next sync); an admin who holds those keys can approve or grant instead"
        for project, epochs in missing_history(team, projects).items()
    ]


def _status(item: dict[str, Any]) -> str:
    if "refused" in item:
        return "refused: " + str(item["refused"])
    if item["member"]:
        return "member"
    flags = ["ok"]
    if item["clash"]:
        flags.append("name clash")
    if item.get("rejected_before") is not None:
        flags.append("rejected before")
    return ", ".join(flags)


def requests(as_json: JsonOpt = False) -> None:
    """List the join requests waiting, with fingerprints; 'admin approve' approves these."""
    from ..team.approval import show_requests

    with open_team() as team:
        team.refresh(team.trusted(), now_ms())
        items, shown = show_requests(team, now_ms())
        skipped = team.transport.take_warnings()
    if as_json:
        doc = {"kids": sorted(shown.requests), "at": shown.shown_at, "digest": shown.digest}
        output.emit_json({"requests": items, "warnings": skipped, "shown": doc})
        return
    for note in skipped:
        output.warn(note)
    if not items:
        output.say("no join requests are waiting")
        return
    rows = [
        [
            i["name"] or "?",
            i["kid"],
            i["fingerprint"] or "-",
            i["invite_id"] or "-",
            "-" if i["age_ms"] is None else span(i["age_ms"]),
            _status(i),
        ]
        for i in items
    ]
    headers = ["NAME", "KID", "FINGERPRINT", "INVITE", "AGE", "STATUS"]
    output.say(output.table(rows, headers))
    for i in items:
        if "refused" in i:
            output.say(f"{i['kid']}: {output.one_line(str(i['detail']))}")
            continue
        if i["clash"] and not i["member"]:
            output.say(f"{i['kid']}: the name {i['name']!r} looks like {i['clash']}")
        if i.get("rejected_before") is not None and not i["member"]:
            output.say(
                f"{i['kid']}: you rejected a join request of this key before "
                f"({output.format_time(i['rejected_before'])}); approve it only if you mean to"
            )
    if shown.requests:
        output.say(
            f"\nafter comparing fingerprints: 'sealmem admin approve' approves these "
            f"{len(shown.requests)} (within the hour), or name them: 'sealmem admin approve NAME'"
        )


def _confirm_shown(plan: Any, *, yes: bool) -> None:
    """List what approving the shown requests does; ask (or refuse without a terminal)."""

    for view in plan.left:
        why = (
            f"refused ({view.refused[0]})"
            if view.refused
            else "you rejected it after 'admin requests'"
            if view.kid in plan.rejected
            else "arrived or changed after 'admin requests'"
        )
        output.say(f"left waiting: {view.name or '?'} ({view.kid}): {why}", err=True)
    for kid in plan.gone:
        output.say(f"no longer waiting: {kid}", err=True)
    if not plan.approve:
        raise InputError(
            "none of the join requests last shown by 'sealmem admin requests' can be "
            "approved now; run it again"
        )
    names = "\n".join(f"  {v.name} ({v.kid}) fingerprint {v.fingerprint}" for v in plan.approve)
    what = f"approve these {len(plan.approve)} join request(s), as shown:\n{names}"
    output.say(what, err=True)
    if yes:
        return
    if not sys.stdin.isatty():
        raise InputError(
            "nothing was approved: confirm with --yes (no terminal to ask), or name the "
            "requests ('sealmem admin approve NAME')"
        )
    if not typer.confirm("approve?", default=False, err=True):
        raise typer.Abort()


def approve(
    request: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[NAME|KID]...",
            help="Requests by name or id (default: those the last 'admin requests' showed).",
        ),
    ] = None,
    project: ProjectsOpt = None,
    read: ReadOpt = None,
    write: WriteOpt = None,
    from_now: FromNowOpt = False,
    rename: Annotated[
        str | None,
        typer.Option("--as", help="Approve the one request named under this member name."),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve the shown requests without asking.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Approve join requests: new roster + keyrings. Compare fingerprints first."""
    from ..team import approval as requests_of
    from ..team.inbox import load_shown

    may_read, may_write = member_access(read, write)
    with open_team() as team:
        left: list[dict[str, Any]] = []
        if rename is not None and len(request or []) != 1:
            raise InputError(
                "--as renames one request: approve that one alone ('admin approve KID --as X')"
            )
        team.refresh(team.trusted(), now_ms())
        shown = load_shown(team.home, team=team.config.team, now=now_ms())
        if not request:
            plan = requests_of.plan_shown(team, shown, now_ms())
            _confirm_shown(plan, yes=yes)
            request = [v.kid for v in plan.approve]
            left = [{"kid": v.kid, "name": v.name} for v in plan.left]
        else:  # by name or id: still one of those shown, and say which key it is
            for view in requests_of.chosen_requests(team, request, now_ms()):
                fingerprint = view.fingerprint or "-"
                output.say(
                    f"approving {view.name or '?'} ({view.kid}) fingerprint {fingerprint}",
                    err=True,
                )
        projects = with_shared(team, project)
        done = requests_of.approve(
            team, request, projects=projects, read=may_read, write=may_write, now=now_ms(),
            rename=rename, expect=shown, from_now=from_now,
        )  # fmt: skip
        gaps = history_gaps(team, projects, read=may_read, from_now=from_now)
        doc = {"approved": [a.to_dict() for a in done], **roster_doc(team.roster())}
        doc["left_waiting"] = left
    doc["warnings"] = gaps
    if as_json:
        output.emit_json(doc)
        return
    for note in gaps:
        output.warn(note)
    for a in done:
        output.say(f"approved {a.name} ({a.kid}) fingerprint {a.fingerprint}")
    what = access_words(may_read, may_write)
    output.say(f"access: {what} on {', '.join(projects or doc['projects'])}")
    output.say(f"roster is now v{doc['roster_version']}")


def reject(
    request: Annotated[
        list[str] | None,
        typer.Argument(metavar="[NAME|KID]...", help="Requests to remove, by name or id."),
    ] = None,
    all_refused: Annotated[
        bool,
        typer.Option("--all-refused", help="Also remove every refused or expired request."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove join requests from the folder or hub without approving them."""
    from ..team.approval import reject as reject_requests

    with open_team() as team:
        team.refresh(team.trusted(), now_ms())
        gone = reject_requests(team, request or [], all_refused=all_refused, now=now_ms())
    items = [{"kid": v.kid, "name": v.name, "refused": (v.refused or (None,))[0]} for v in gone]
    if as_json:
        output.emit_json({"rejected": items})
        return
    if not items:
        output.say("no join request was removed")
    for i in items:
        why = f" (refused: {i['refused']})" if i["refused"] else ""
        output.say(f"removed the join request of {i['name'] or '?'} ({i['kid']}){why}")


def register(admin_app: typer.Typer) -> None:
    admin_app.command()(requests)
    admin_app.command()(approve)
    admin_app.command()(reject)
