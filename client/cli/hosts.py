"""Commands that wire sealmem into agent hosts: install, uninstall, hooks."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the agent-host commands to ``app``."""
