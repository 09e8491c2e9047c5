"""``sealmem review``: memories no one confirmed for the review period, offered again.

A memory is stale when no one wrote, edited, re-remembered, accepted, kept or
recalled it within the period (:mod:`sealmem.client.store.freshness`; the team's, 180
days unless an admin sets another, or your own: ``review period DAYS``).  Nothing
stale is ever deleted: this noun lists them, ``keep`` confirms one (its clock starts
again), ``correct`` stores the corrected text as a new memory that supersedes it,
``forget`` is the normal forget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...protocol.errors import InputError
from ..recall.names import member_names
from ..store.ids import short_id
from . import complete, output
from .memory import AllProjectsOpt, JsonOpt, ProjectOpt, open_store, resolve_project
from .textinput import read_content

if TYPE_CHECKING:
    from .. import Memory

__all__ = ["review_app"]

review_app = typer.Typer(
    rich_markup_mode=None,
    help="Memories no one confirmed for a while: keep, correct or forget each.",
)

IdArg = Annotated[
    str,
    typer.Argument(
        metavar="ID",
        autocompletion=complete.memory_ids,
        help="The memory id: the full id, or at least 8 hex digits that start or end it.",
    ),
]


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= 90 else line[:87] + "..."


@review_app.callback(invoke_without_command=True)
def list_stale(
    ctx: typer.Context,
    project: ProjectOpt = None,
    all_projects: AllProjectsOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List stale memories: no one confirmed or recalled them within the review period."""
    if ctx.invoked_subcommand is not None:
        return
    with open_store(readonly=True) as store:
        days = store.review_period()
        found = store.stale(
            project=None if all_projects else resolve_project(project), all_projects=all_projects
        )
        when = {m.id: at for m, at in found}
        shown = [m for m, _ in store.reader().for_people(m for m, _ in found)]
        names, me = member_names(store.connection), store.author
    rows: list[dict[str, Any]] = [_row(m, when.get(m.id), names, me) for m in shown]
    if as_json:
        output.emit_json({"period_days": days, "stale": rows})
        return
    if not rows:
        output.say(f"nothing stale: every memory in scope was confirmed in the last {days} days")
        return
    output.say(f"{len(rows)} memories no one confirmed in the last {days} days:")
    for row in rows:
        output.say(
            f"  {short_id(row['id'])}  {row['kind']}  by {row['written_by']}  last confirmed "
            f"{output.format_time(row['confirmed_at'])}\n      {output.one_line(row['first_line'])}"
        )
    output.say(
        "keep one with 'sealmem review keep ID', correct it with 'sealmem review correct ID "
        "TEXT', or 'sealmem review forget ID --reason WHY'"
    )


def _row(memory: Memory, at: int | None, names: Any, me: str) -> dict[str, Any]:
    rec = memory.record
    return {
        "id": rec.id,
        "project": rec.project,
        "kind": rec.kind,
        "first_line": _first_line(rec.content),
        "content": rec.content,
        "written_by": memory.authorship(names, me).writer_name,
        "confirmed_at": at,
    }


@review_app.command()
def keep(memory_id: IdArg, as_json: JsonOpt = False) -> None:
    """Confirm a memory is still right: it is no longer stale, its clock starts again."""
    with open_store() as store:
        memory = store.keep(memory_id)
        days = store.review_period()
    if as_json:
        output.emit_json({"kept": memory.id, "period_days": days})
        return
    output.say(f"kept {memory.id}: confirmed now, stale again after {days} days unused")


@review_app.command()
def correct(
    memory_id: IdArg,
    text: Annotated[str, typer.Argument(help="The corrected text, or '-' to read it from stdin.")],
    as_json: JsonOpt = False,
) -> None:
    """Store the corrected text as a new memory that supersedes this one (same project,
    kind and visibility); the old one stays, demoted, with its history."""
    from ..recall.sessions import cli_origin

    content = read_content(text)
    with open_store() as store:
        old_id = store.get(memory_id).id
        result = store.correct(old_id, content, origin=cli_origin())
    for message in result.warnings:
        output.warn(message)
    new = result.memory.record
    if as_json:
        output.emit_json({"corrected": old_id, "memory": result.memory.to_dict()})
        return
    output.say(f"corrected {old_id}: {new.id} supersedes it ({new.kind}, project {new.project})")


@review_app.command()
def forget(
    memory_id: IdArg,
    reason: Annotated[
        str | None,
        typer.Option("--reason", help="Required: why it is forgotten (kept in the tombstone)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget a stale memory: the normal 'sealmem forget' (text erased, reason kept)."""
    from .memory import forget as forget_memory

    forget_memory(memory_id, reason=reason, as_json=as_json)


@review_app.command()
def period(
    days: Annotated[
        int | None,
        typer.Argument(help="Days without confirmation after which a memory is stale."),
    ] = None,
    team: Annotated[
        bool, typer.Option("--team", help="Drop your own period here: the team's applies.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show the stale period, or set your own on this machine to DAYS (it wins over the
    team's; 180 days unless an admin sets another)."""
    from ..store.periods import STALE

    if days is not None and team:
        raise InputError("give DAYS or --team, not both")
    with open_store(readonly=days is None and not team) as store:
        now = store.set_period(STALE, days) if days is not None or team else store.period(STALE)
    if as_json:
        output.emit_json({"period_days": now.days, **now.to_dict()})
        return
    verb = "review period set to" if days is not None else "review period:"
    output.say(f"{verb} {now.words()} (a memory no one confirms for longer is stale)")
