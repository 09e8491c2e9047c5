"""The ``sealmem`` entry point: hooks start without the CLI framework.

A host runs ``sealmem hook prompt`` on every prompt the user submits, so its
start-up is on the user's path.  Typer (with click, and pydantic, which typer
uses to convert values) costs more to import than the hook does to answer.
:func:`main` therefore runs ``sealmem hook NAME [--home DIR]`` itself, with the
same meaning as the typer command (``sealmem.client.cli.hosts.hook_cmd`` calls
:func:`run_hook` too), and hands every other command line, ``--help`` included,
to the typer app.  Nothing here imports more than the hook needs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["emit_hook_output", "main", "run_hook"]


def run_hook(name: str, home: Path | None) -> str:
    """What hook ``name`` prints (escaped for a terminal), reading its JSON from stdin."""
    from .cli.output import clean
    from .hosts import hooks
    from .paths import HOME_ENV

    if home is not None:
        os.environ[HOME_ENV] = str(home)

    def read_input() -> str:
        stream = sys.stdin
        return "" if stream is None or stream.isatty() else stream.read()

    # Teammates' text, on its way to a host that may show it in a terminal: escaped
    # like everything else the CLI prints (newlines kept).
    return clean(hooks.run(name, read_input))


def emit_hook_output(text: str) -> None:
    """Print a hook's text for the host, as UTF-8 whatever the locale; never raises.

    Hosts read a hook's stdout as UTF-8, while Python writes a pipe in the locale's
    encoding (on Windows the ANSI code page, where a teammate's emoji or CJK text does
    not exist: a ``UnicodeEncodeError`` failed the hook).  A host that stopped reading
    (a closed pipe) loses the text, and the hook still ends with status 0.
    """
    data = (text + "\n").encode("utf-8", "replace")
    try:
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            sys.stdout.flush()
            buffer.write(data)
            buffer.flush()
        else:  # a text stream with no bytes underneath (an in-process test's capture)
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
    except (OSError, ValueError, UnicodeError):
        # Nobody reads any more: point stdout at the null device so that the flush at
        # exit does not fail the hook a second time (the Python docs' BrokenPipe recipe).
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
        except (OSError, ValueError):
            return


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
        from .hosts.hooks import HOOK_NAMES

        if hook[0] in HOOK_NAMES:
            text = run_hook(*hook)
            if text:
                emit_hook_output(text)
            return 0
    from .cli import main as cli_main

    return cli_main(args)
