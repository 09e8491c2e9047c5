"""The ``sealmem`` entry point: hooks start without the CLI framework.

A host runs ``sealmem hook prompt`` on every prompt the user submits, so its
start-up is on the user's path.  Typer (with click, and pydantic, which typer
uses to convert values) costs more to import than the hook does to answer.
:func:`main` therefore runs ``sealmem hook NAME [--home DIR]`` itself, with the
same meaning as the typer command (both call
:func:`sealmem.client.hosts.hooks.run_hook`), and hands every other command line,
``--help`` included, to the typer app.  Nothing here imports more than the hook needs.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]


def _hook_args(args: list[str]) -> tuple[str, Path | None] | None:
    """``NAME [--home DIR]`` as (name, home); None for anything else (typer answers)."""
    name: str | None = None
    home: Path | None = None
    rest = iter(args)
    for arg in rest:
        if arg == "--home":
            value = next(rest, None)
            if value is None:
                return None
            home = Path(value)
        elif arg.startswith("--home="):
            home = Path(arg.removeprefix("--home="))
        elif arg.startswith("-") or name is not None:
            return None  # --help, an unknown option, a second name
        else:
            name = arg
    return None if name is None else (name, home)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = sys.argv[1:] if argv is None else argv
    hook = _hook_args(args[1:]) if args[:1] == ["hook"] else None
    if hook is not None:
        from .hosts.hooks import HOOK_NAMES, emit_hook_output, run_hook

        if hook[0] in HOOK_NAMES:
            text = run_hook(*hook)
            if text:
                emit_hook_output(text)
            return 0
    from .cli import main as cli_main

    return cli_main(args)
