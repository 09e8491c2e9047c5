"""The ``sealmem`` command line (typer).

Each noun group lives in its own module with a ``register(app)`` function.
Errors are turned into one message and an exit code here, in one place: an
expected failure (any :class:`SealmemError`) never shows a traceback.
"""

from __future__ import annotations

import sys

import typer

from sealmem.client.cli import hosts, memory
from sealmem.protocol.errors import SealmemError

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


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (1 for an expected failure)."""
    try:
        app(args=argv, prog_name="sealmem", standalone_mode=False)
    except SealmemError as exc:
        typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
        return 1
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 1
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            return exc.exit_code
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
