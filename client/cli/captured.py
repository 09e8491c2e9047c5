"""``sealmem captured``: review what the hooks captured and agents stored before the
team sees it.

The Stop hook, ``sealmem scan --store`` and ``sealmem watch --store`` store
what they capture from transcripts as *private* memories marked ``hook``, and an
agent's MCP ``remember`` stores private memories marked ``agent``
(:mod:`sealmem.client.store.agentwrites`): no sync shares them.  This noun
lists them, ``accept`` makes a team version of each (the next sync shares
it, still marked), ``discard`` forgets them; ``agent-writes`` says whether an
agent's memories wait here (``review``, the default) or are shared at once
(``share``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...protocol.errors import InputError
from ..store.ids import short_id
from . import output
from .memory import JsonOpt, open_store

if TYPE_CHECKING:
    from .. import Memory, MemoryStore
    from ..hosts.review import Waiting
    from ..store.agentwrites import HeldForget

__all__ = ["captured_app"]


captured_app = typer.Typer(
    rich_markup_mode=None,
    help="Review what hooks captured, agents stored and imports brought: private until "
    "accepted, then shared with the team.",
)

IdsArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="ID...",
        help="Ids of captured memories or teammates' versions (the full id, or at least 8 "
        "hex digits of it; ID@WRITER where the list shows one).",
    ),
]
AllOpt = Annotated[
    bool,
    typer.Option(
        "--all",
        help="Every captured memory waiting (discard: teammates' versions too; accept one "
        "of those by id).",
    ),
]


def _waiting(store: MemoryStore, project: str | None = None) -> list[Memory]:
    from ..hosts.review import waiting

    return waiting(store, project)


def _teammates(store: MemoryStore, project: str | None = None) -> list[Waiting]:
    from ..hosts.review import from_teammates

    return from_teammates(store, project)


def _teammate_row(item: Waiting) -> dict[str, Any]:
    from ..hosts.review import ref

    record = item.memory.record
    return {
        "id": record.id,
        "ref": ref(item),
        "from": item.writer_name,
        "trust": item.standing.state,
        "action": item.action,
        "target": None if item.target is None else item.target.id,
        "project": record.project,
        "kind": record.kind,
        "first_line": _first_line(record.content),
        "content": "" if item.action == "delete" else record.content,
        "flags": item.flags,
    }


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= 72 else line[:69] + "..."


def _row(memory: Memory) -> dict[str, Any]:
    record = memory.record
    return {
        "id": record.id,
        "created_at": record.created_at,
        "project": record.project,
        "kind": record.kind,
        "first_line": _first_line(record.content),
        "content": record.content,
        "visibility": record.visibility,
        "source": memory.source,
    }


@captured_app.callback(invoke_without_command=True)
def list_captured(
    ctx: typer.Context,
    project: Annotated[
        str | None, typer.Option("--project", "-p", help="Only this project (default: all).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List captured, agent-written and imported memories waiting for review (private:
    no sync shares them)."""
    if ctx.invoked_subcommand is not None:
        return
    from ..hosts.review import forgets

    with open_store(readonly=True) as store:
        waiting = _waiting(store, project)
        teammates = _teammates(store, project)
        asked = [(f, m) for f, m in forgets(store) if project in (None, m.project)]
    if as_json:
        output.emit_json(
            {
                "captured": [_row(m) for m in waiting],
                "teammates": [_teammate_row(t) for t in teammates],
                "forgets": [
                    {**_row(m), "reason": f.reason, "asked_by": f.origin} for f, m in asked
                ],
            }
        )
        return
    if asked:
        _say_forgets(asked)
    if teammates:
        _say_teammates(teammates)
    if not waiting:
        if not (teammates or asked):
            output.say("no captured memories waiting for review")
        return
    rows = [
        [
            short_id(m.record.id),
            output.format_time(m.record.created_at),
            m.record.project,
            m.record.kind,
            m.source,
            _first_line(m.record.content),
        ]
        for m in waiting
    ]
    output.say(output.table(rows, ["ID", "CAPTURED", "PROJECT", "KIND", "BY", "FIRST LINE"]))
    output.say(
        f"\n{len(waiting)} private; share with 'sealmem captured accept ID...' (or --all), "
        "drop with 'sealmem captured discard ID...'"
    )


def _say_forgets(asked: list[tuple[HeldForget, Memory]]) -> None:
    rows = [
        [short_id(m.id), m.record.project, m.record.kind, f.reason, _first_line(m.record.content)]
        for f, m in asked
    ]
    output.say(output.table(rows, ["ID", "PROJECT", "KIND", "REASON", "FIRST LINE"]))
    output.say(
        f"\n{len(asked)} an agent asks to forget (shared with the team, so nothing was "
        "erased): 'sealmem captured accept ID...' forgets it, 'discard' keeps it\n"
    )


def _say_teammates(teammates: list[Waiting]) -> None:
    from collections import Counter

    from ..hosts.review import ref

    twice = Counter(t.memory.id for t in teammates)
    rows = [
        [
            ref(t, short=True) if twice[t.memory.id] > 1 else short_id(t.memory.id),
            t.writer_name,
            t.action if t.target is None else f"{t.action} {short_id(t.target.id)}",
            t.memory.kind,
            ", ".join(t.flags) or "-",
            _first_line(t.memory.content) if t.action != "delete" else "",
        ]
        for t in teammates
    ]
    output.say(output.table(rows, ["ID", "FROM", "WHAT", "KIND", "FLAGS", "FIRST LINE"]))
    output.say(
        f"\n{len(teammates)} from teammates, out of your agent's automatic context until "
        "accepted: 'sealmem captured accept ID...' lets one in, 'discard' keeps it out\n"
    )


def _chosen(
    store: MemoryStore, ids: list[str] | None, every: bool, verb: str
) -> tuple[list[Memory], list[Waiting], list[HeldForget]]:
    """The captured memories, the teammates' versions and the agents' forgets ``ids``
    name (each checked before any is changed), or every capture; with ``discard``,
    every teammate's version and forget too.  A teammate's version and a forget are
    accepted by id only: ``accept --all`` is the captures'."""
    from ..hosts.review import check_forgets, choose, forgets, split, take_forgets

    if every and ids:
        raise InputError(f"give ids or --all, not both (sealmem captured {verb} --all)")
    if every:
        if verb == "accept":
            return _waiting(store), [], []
        return _waiting(store), _teammates(store), [f for f, _ in forgets(store)]
    rest, asked = take_forgets(store, ids or [])
    if verb == "accept":
        check_forgets(store, asked)  # before any capture or verdict is changed
    rest, theirs = split(store, rest)
    mine = choose(store, rest, verb) if rest or not (theirs or asked) else []
    return mine, theirs, asked


@captured_app.command()
def accept(ids: IdsArg = None, every: AllOpt = False, as_json: JsonOpt = False) -> None:
    """Share captured memories with the team: the next sync sends them."""
    from ..hosts import review

    with open_store() as store:
        chosen, theirs, asked = _chosen(store, ids, every, "accept")
        done = [{**_row(m), "already_shared": was} for m, was in review.accept(store, chosen)]
        review.judge(store, theirs, "accepted")
        forgot = review.settle_forgets(store, asked, accepted=True)
        left = len(_teammates(store)) if every else 0
    if as_json:
        extra: dict[str, Any] = {"teammates": [_teammate_row(t) for t in theirs]} if theirs else {}
        if forgot:
            extra["forgotten"] = [m.id for m in forgot]
        output.emit_json({"accepted": done, **extra, "teammates_waiting": left})
        return
    for memory in forgot:
        reason = output.one_line(memory.record.delete_reason or "")  # the agent's words
        output.say(f"{short_id(memory.id)}  forgotten: {reason}")
    for item in theirs:
        output.say(f"{short_id(item.memory.id)}  accepted from {item.writer_name}")
    for row in done:
        note = "already shared" if row["already_shared"] else "shared with the team"
        output.say(f"{short_id(row['id'])}  {note}: {row['first_line']}")
    output.say(f"{len(done)} accepted; 'sealmem sync' sends them")
    if left:
        output.say(
            f"{left} from teammates still wait: --all is for your captures; let one in by id "
            "('sealmem captured' lists them, 'sealmem captured accept ID')"
        )


@captured_app.command()
def discard(ids: IdsArg = None, every: AllOpt = False, as_json: JsonOpt = False) -> None:
    """Forget captured memories that were never shared (reason "discarded capture")."""
    from ..hosts import review

    with open_store() as store:
        chosen, theirs, asked = _chosen(store, ids, every, "discard")
        done = [_row(memory) for memory in review.discard(store, chosen)]
        review.judge(store, theirs, "dismissed")
        kept = review.settle_forgets(store, asked, accepted=False)
    if as_json:
        extra: dict[str, Any] = {"dismissed": [t.memory.id for t in theirs]} if theirs else {}
        if kept:
            extra["kept"] = [m.id for m in kept]
        output.emit_json({"discarded": [row["id"] for row in done], **extra})
        return
    for memory in kept:
        output.say(f"{short_id(memory.id)}  kept: the agent's forget is dropped")
    for item in theirs:
        output.say(f"{short_id(item.memory.id)}  kept out of your agent's context")
    for row in done:
        output.say(f"{short_id(row['id'])}  discarded: {row['first_line']}")
    output.say(f"{len(done)} discarded")


@captured_app.command("agent-writes")
def agent_writes(
    choice: Annotated[
        str | None,
        typer.Argument(
            metavar="[review|share]",
            help="review: an agent's memories stay private until you accept them (the "
            "default); share: shared with the team at once, still marked agent.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show or set whether what an agent stores waits for review or is shared at once."""
    from ..store import agentwrites

    with open_store(readonly=choice is None) as store:
        now = (
            agentwrites.policy(store.connection)
            if choice is None
            else agentwrites.set_policy(store.connection, choice)
        )
    if as_json:
        output.emit_json({"agent_writes": now})
    elif now == "review":
        output.say("agent writes: review (private until accepted with 'sealmem captured accept')")
    else:
        output.say("agent writes: share (shared with the team at once, marked agent-written)")
