"""``sealmem sync [--watch]``: one summary line per sync.

Exit status: 0 when the sync ran (refused teammate objects are reported, not
fatal), 1 when something stopped it (unreachable folder, bad local state).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from . import output
from .memory import JsonOpt
from .team import open_team

if TYPE_CHECKING:
    from ...protocol.errors import SealmemError
    from ..sync.engine import SyncSummary

__all__ = ["register"]


def _stamp() -> str:
    """When a ``--watch`` line was printed (UTC, to the second): a line read later
    says when it happened."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC ")


def _show(summary: SyncSummary, as_json: bool, stamp: bool = False) -> None:
    if as_json:
        output.emit_json(summary.to_dict())
        return
    output.say((_stamp() if stamp else "") + summary.line())
    for refusal in summary.refused:
        output.warn(f"refused {refusal.object}: {refusal.reason}: {refusal.detail}")
    for note in summary.warnings:
        output.warn(note)


def sync(
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep running; sync when the folder or store changes.")
    ] = False,
    interval: Annotated[
        float, typer.Option(help="With --watch: also sync every this many seconds.")
    ] = 60.0,
    max_backoff: Annotated[
        float,
        typer.Option(
            help="With --watch: after failed syncs, wait at most this many seconds between "
            "attempts (random, doubling from 1 s)."
        ),
    ] = 300.0,
    adopt: Annotated[
        bool,
        typer.Option(
            "--adopt",
            help="Read your own chain back from the team once more although this machine "
            "did so before (a home restored again from a backup; never on a copy).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Push your memories to the team and pull your teammates'."""
    from ...protocol.errors import InputError
    from ..sync import engine

    if watch and adopt:  # a confirmation holds for one sync, never for every one after it
        raise InputError("--adopt confirms one sync: run 'sealmem sync --adopt' alone first")
    with open_team() as team:
        if not watch:
            _show(engine.sync(team, adopt=adopt), as_json)
            return
        from ..sync.backoff import BACKOFF_START_S, Backoff
        from ..sync.hub_answers import hub_said
        from ..sync.watch import watch as watch_loop

        backoff = Backoff(max_s=max(max_backoff, BACKOFF_START_S))

        def failed(exc: SealmemError) -> None:
            said = hub_said(exc)
            output.warn(
                f"{_stamp()}sync failed: {exc}; retrying with a growing, random wait (up to "
                f"{backoff.max_s:g} s between attempts); nothing more is printed until this changes"
                + ("" if said is None else f"\n  {said}")
            )

        def recovered(attempts: int) -> None:
            output.say(f"{_stamp()}sync works again after {attempts} failed attempts", err=True)

        watch_loop(
            team,
            on_sync=lambda s: _show(s, as_json, stamp=True),
            on_error=failed,
            on_recovered=recovered,
            interval_s=interval,
            backoff=backoff,
        )


def register(app: typer.Typer) -> None:
    app.command()(sync)
