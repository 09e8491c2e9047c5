"""Commands over the local store: init, remember, recall, show, list, forget, ..."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the local-memory commands to ``app``."""
