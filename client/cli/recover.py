"""``sealmem recover``: salvage what is readable from a damaged store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..clock import now_ms
from . import output
from .memory import JsonOpt

if TYPE_CHECKING:
    from ..store.recover import RecoverResult

__all__ = ["recover", "register", "summary"]


def recover(
    output_file: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the salvaged store here (must not exist) and leave the damaged one "
            "as it is; default: replace the store, keeping the damaged file beside it.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Salvage the readable memories of a damaged store into a new store; print what was lost."""
    from ..paths import ensure_home, store_path
    from ..store.recover import recover as salvage

    path = store_path(ensure_home())
    result = salvage(path, output=output_file, now_ms=now_ms())
    if as_json:
        output.emit_json(result.to_dict())
        return
    output.say(summary(result))
    rows = [
        [table, str(count), str(result.lost.get(table, 0))]
        for table, count in sorted(result.recovered.items())
    ]
    rows += [[table, "-", "whole table"] for table in result.unreadable_tables]
    output.say(output.table(rows, ["TABLE", "RECOVERED", "LOST"]))
    if result.damaged is not None:
        output.say(f"the damaged store is kept as {result.damaged}")
    output.say("next: 'sealmem doctor' checks the new store; 'sealmem sync' fetches the team's")


def summary(result: RecoverResult) -> str:
    """One line: how many memories came back, how many could not be read, which tables
    were lost whole."""
    memories, lost = result.recovered.get("memories", 0), result.lost.get("memories", 0)
    if "memories" in result.unreadable_tables:
        line = f"recovered no memories into {result.output}: the memories table is unreadable"
    else:
        line = f"recovered {memories} memories into {result.output}; {lost} unreadable"
    if result.unreadable_tables:
        line += f" (tables lost whole: {', '.join(result.unreadable_tables)})"
    return line


def register(app: typer.Typer) -> None:
    app.command()(recover)
