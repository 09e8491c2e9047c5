"""``sealmem mcp``: run the MCP server for an agent host (stdio, or ``--http``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ...protocol.errors import InputError
from ..mcp.http import DEFAULT_PORT

__all__ = ["mcp", "register"]


def mcp(
    project: Annotated[
        str | None,
        typer.Option(
            "--project",
            "-p",
            help="Project the tools default to (default: the git repository name of the cwd).",
        ),
    ] = None,
    http: Annotated[
        bool,
        typer.Option(
            "--http",
            help="Serve streamable HTTP on 127.0.0.1 instead of stdin/stdout; a bearer "
            "token is required (SEALMEM_MCP_TOKEN, or one printed at start).",
        ),
    ] = False,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            metavar="PORT",
            help=f"Port for --http on 127.0.0.1 (default {DEFAULT_PORT}; 0: a free one).",
        ),
    ] = None,
) -> None:
    """Run the MCP server for an agent host: stdin/stdout, or streamable HTTP with --http."""
    if http:
        from ..mcp.http import run_http

        run_http(port=DEFAULT_PORT if port is None else port, project=project)
        return
    if port is not None:
        raise InputError("--port is refused without --http: stdio has no port; add --http")
    from ..mcp.server import run_stdio

    run_stdio(project=project)


def register(app: typer.Typer) -> None:
    app.command()(mcp)
