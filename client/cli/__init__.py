"""The ``sealmem`` command line (typer).

Each noun group lives in its own module with a ``register(app)`` function.
Errors are turned into one message and an exit code here, in one place: an
expected failure (any :class:`SealmemError`) never shows a traceback.
"""

from __future__ import annotations

import sys

import typer

from ...protocol.errors import SealmemError
from . import admin, hosts, hub, memory, output, sync, team

__all__ = ["app", "main"]

app = typer.Typer(
    name="sealmem",
    help="Signed, end-to-end encrypted team memory for coding agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

memory.register(app)
hosts.register(app)
team.register(app)
admin.register(app)
sync.register(app)
hub.register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (1 for an expected failure)."""
    try:
        rc = app(args=argv, prog_name="sealmem", standalone_mode=False)
    except SealmemError as exc:
        typer.secho(f"error: {output.clean(str(exc))}", err=True, fg=typer.colors.RED)
        return 1
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 1
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except KeyboardInterrupt:
        return 130
    except typer.TyperException as exc:
        # Usage errors (missing option, bad value): click's own message, no traceback.
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            message = output.clean(exc.format_message())
            typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
        return int(exc.exit_code)
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
