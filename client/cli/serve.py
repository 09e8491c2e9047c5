"""``sealmem mcp``: run the stdio MCP server for an agent host."""

from __future__ import annotations

from typing import Annotated

import typer

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
) -> None:
    """Run the MCP server on stdin/stdout (hosts start this; it is not interactive)."""
    from ..mcp.server import run_stdio

    run_stdio(project=project)


def register(app: typer.Typer) -> None:
    app.command()(mcp)
