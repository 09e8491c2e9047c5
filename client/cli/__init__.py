"""The ``sealmem`` command line (typer); the app and its error boundary are in :mod:`.root`.

Importing this package costs nothing: typer (with click and pydantic) loads only
when a command runs through the app, so modules here that need no typer (the
output helpers the hooks use) import quickly.  ``sealmem hook ...`` does not load
it at all (:mod:`sealmem.client.launch`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

    app: typer.Typer

__all__ = ["app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (1 for an expected failure)."""
    from .root import main as run

    return run(argv)


def __getattr__(name: str) -> Any:
    if name == "app":
        from .root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
