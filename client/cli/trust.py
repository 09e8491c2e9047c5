"""``sealmem trust``: how far each teammate's memories reach your agent.

``period`` shows or sets how long a member approved after you stays in ``review`` (the
team's period, 7 days unless an admin sets another; your own here wins).  ``trusted``
memories enter the automatic contexts (session start, prompt hook) within the writer's
share; ``review`` ones answer explicit recall, labelled, and enter the automatic
contexts once accepted in ``sealmem captured``; ``muted`` ones reach no agent
(``purge`` also deletes them from this machine).  The rules: :mod:`..recall.trust`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...protocol.errors import InputError
from ..recall.trust import MUTED, STATES
from . import output
from .memory import JsonOpt, open_store

if TYPE_CHECKING:
    from .. import MemoryStore

__all__ = ["trust_app"]

trust_app = typer.Typer(
    rich_markup_mode=None,
    help="Trust in each teammate: trusted, review (accept first) or muted (reaches no agent).",
)
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="A member's name or id.")]


def _rows(store: MemoryStore) -> list[dict[str, Any]]:
    from ..recall.names import people
    from ..store.trust_rows import member_settings

    reader = store.reader()
    settings = member_settings(store.connection)
    names = people(store.connection)  # states are per member id
    rows = []
    for kid, state in sorted(reader.states.items(), key=lambda kv: names.get(kv[0], kv[0])):
        if kid == reader.member:
            continue
        rows.append(
            {
                "member": kid,
                "name": names.get(kid, kid[:8]),
                "state": state,
                "set_by": "you" if kid in settings else "default",
            }
        )
    return rows


def _member(store: MemoryStore, given: str) -> tuple[str, str]:
    """(member id, name) of the member ``given`` names: its roster name, or its id."""
    from ..recall.names import member_ids, people

    names = people(store.connection)  # trust is per member: its devices are the member
    found = [
        k for k, n in names.items() if given in (n, k) or (len(given) >= 8 and k.startswith(given))
    ]
    if len(found) != 1:
        problem = "matches several members" if found else "is not a member of the team"
        raise InputError(f"{given!r} {problem}; 'sealmem trust list' shows names and ids")
    if found[0] == member_ids(store.connection).get(store.author, store.author):
        raise InputError(f"{given!r} is you: your own memories are always yours")
    return found[0], names[found[0]]


@trust_app.command("list")
def list_trust(as_json: JsonOpt = False) -> None:
    """Every teammate's trust state, and whether you set it or it is the default."""
    with open_store(readonly=True) as store:
        rows = _rows(store)
    if as_json:
        output.emit_json({"members": rows})
        return
    if not rows:
        output.say("no teammates yet (join a team with 'sealmem team join')")
        return
    table = [[r["name"], r["member"][:8], r["state"], r["set_by"]] for r in rows]
    output.say(output.table(table, ["NAME", "ID", "TRUST", "SET BY"]))


@trust_app.command("set")
def set_trust(
    name: NameArg,
    state: Annotated[str, typer.Argument(metavar="STATE", help="trusted, review or muted.")],
    as_json: JsonOpt = False,
) -> None:
    """Set how far a teammate's memories reach your agent (on each of your devices)."""
    from ..store.trust_rows import save_member_state

    if state not in STATES:
        raise InputError(f"trust {state!r} must be one of {', '.join(STATES)}")
    with open_store() as store:
        kid, shown = _member(store, name)
        save_member_state(store.connection, kid, state, store.now())
    if as_json:
        output.emit_json({"member": kid, "name": shown, "state": state})
        return
    output.say(f"{shown} ({kid[:8]}) is now {state}")


@trust_app.command()
def purge(name: NameArg, as_json: JsonOpt = False) -> None:
    """Delete a muted teammate's memories from this machine (others' versions come back)."""
    from ..recall.names import member_ids
    from ..sync.dropping import Dropped, drop_writer

    with open_store() as store:
        kid, shown = _member(store, name)
        if store.reader().states.get(kid) != MUTED:
            raise InputError(
                f"{shown} is not muted; nothing was deleted: mute first with "
                f"'sealmem trust set {shown} muted'"
            )
        devices = {d for d, m in member_ids(store.connection).items() if m == kid} | {kid}
        dropped = Dropped()
        for device in sorted(devices):  # what each of the member's devices wrote
            dropped.add(drop_writer(store.connection, device, store.now()))
    if as_json:
        output.emit_json({"member": kid, "removed": dropped.removed, "restored": dropped.restored})
        return
    output.say(
        f"{dropped.removed} memories of {shown} deleted here, {dropped.restored} back to an "
        "earlier version by someone else"
    )


@trust_app.command()
def period(
    days: Annotated[
        int | None,
        typer.Argument(metavar="[DAYS]", help="Days a newly approved member stays in review."),
    ] = None,
    team: Annotated[
        bool, typer.Option("--team", help="Drop your own period here: the team's applies.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Show or set how long a member approved after you stays in review (the team's
    period, 7 days unless an admin sets another; yours on this machine wins)."""
    from ..store.periods import REVIEW

    if days is not None and team:
        raise InputError("give DAYS or --team, not both")
    with open_store(readonly=days is None and not team) as store:
        now = store.set_period(REVIEW, days) if days is not None or team else store.period(REVIEW)
    if as_json:
        output.emit_json({"review_days": now.days, **now.to_dict()})
        return
    output.say(f"a member approved after you stays in review for {now.words()}")
