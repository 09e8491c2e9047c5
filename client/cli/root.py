"""The ``sealmem`` command line: the typer app and its one error boundary.

Each noun group lives in its own module with a ``register(app)`` function.
Errors are turned into one message and an exit code here, in one place: an
expected failure (any :class:`SealmemError`) never shows a traceback.  A
``sqlite3.Error`` or ``OSError`` that no lower layer translated (a full disk,
a read-only file system, a permission) is phrased for people by
:mod:`~sealmem.client.failures`, as a last line of defence.  With
``SEALMEM_DEBUG=1`` these errors are raised with their traceback instead;
any other exception is a bug and always shows its traceback.
"""

from __future__ import annotations

import sqlite3
import sys
from typing import Annotated

import typer

from ...protocol.errors import SealmemError
from .. import failures
from ..mcp import package_version
from . import (
    admin,
    captured,
    demo,
    device,
    hosts,
    hub,
    maintenance,
    memory,
    output,
    review,
    serve,
    sync,
    team,
    trust,
    ui,
)
from .readable import ReadableGroup

__all__ = ["app", "main"]

app = typer.Typer(
    rich_markup_mode=None,
    name="sealmem",
    cls=ReadableGroup,
    help="Signed, end-to-end encrypted team memory for coding agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sealmem {package_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Signed, end-to-end encrypted team memory for coding agents."""


maintenance.register_init(app)
memory.register(app)
maintenance.register(app)
serve.register(app)
demo.register(app)
hosts.register(app)
app.add_typer(captured.captured_app, name="captured")
app.add_typer(review.review_app, name="review")
app.add_typer(team.team_app, name="team")
app.add_typer(trust.trust_app, name="trust")
admin.register(app)
device.register(app)
sync.register(app)
app.add_typer(hub.hub_app, name="hub")
ui.register(app)


def _fail(message: str, argv: list[str] | None = None) -> None:
    """The refusal on stderr; with ``--json`` also ``{"error": ...}`` on stdout, so a
    program reading the JSON gets a document, not nothing."""
    typer.secho(f"error: {output.clean(message)}", err=True, fg=typer.colors.RED)
    if "--json" in (sys.argv[1:] if argv is None else argv) and not output.emitted[0]:
        output.emit_json({"error": message})  # unless the command printed its document


def _hub_said(exc: SealmemError) -> None:
    """The hub's own words behind ``exc``, bounded and marked as the hub's (people only)."""
    from ..sync.hub_answers import hub_said

    if (said := hub_said(exc)) is not None:
        typer.secho(f"  {output.clean(said)}", err=True)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (1 for an expected failure)."""
    output.emitted[0] = 0
    try:
        rc = app(args=argv, prog_name="sealmem", standalone_mode=False)
    except SealmemError as exc:
        if failures.debugging():
            raise
        _fail(str(exc), argv)
        _hub_said(exc)
        return 1
    except (sqlite3.Error, OSError) as exc:
        if failures.debugging():
            raise
        _fail(failures.describe(exc), argv)
        return 1
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 1
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:  # typer's --show-completion/--install-completion exit this way
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        return 130
    except typer.TyperException as exc:
        # Usage errors (missing option, bad value): one line, no traceback.
        from .usage import describe

        message = output.one_line(describe(exc, sys.argv[1:] if argv is None else argv))
        typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
        return int(exc.exit_code)
    return rc if isinstance(rc, int) else 0
