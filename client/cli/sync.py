"""``sealmem sync [--watch]``: one summary line per sync.

Exit status: 0 when the sync ran (refused teammate objects are reported, not
fatal), 1 when something stopped it (unreachable folder, bad local state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from . import output
from .memory import JsonOpt
from .team import open_team

if TYPE_CHECKING:
    from ...protocol.errors import SealmemError
    from ..sync.engine import SyncSummary

__all__ = ["register"]


def _show(summary: SyncSummary, as_json: bool) -> None:
    if as_json:
        output.emit_json(summary.to_dict())
        return
    output.say(summary.line())
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
    as_json: JsonOpt = False,
) -> None:
    """Push your memories to the team and pull your teammates'."""
    from ..sync import engine

    with open_team() as team:
        if not watch:
            _show(engine.sync(team), as_json)
            return
        from ..sync.watch import watch as watch_loop

        def failed(exc: SealmemError) -> None:
            output.warn(f"sync failed, will retry: {exc}")

        watch_loop(team, on_sync=lambda s: _show(s, as_json), on_error=failed, interval_s=interval)


def register(app: typer.Typer) -> None:
    app.command()(sync)
