"""The ``sealmem`` command line (typer); the app and its error boundary are in :mod:`.root`.

Importing this package costs nothing: typer (with click and pydantic) loads only
when :func:`main` runs, so modules here that need no typer (the output helpers)
import quickly.  ``sealmem hook ...`` does not load it at all
(:mod:`sealmem.client.launch`).
"""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (1 for an expected failure)."""
    from .root import main as run

    return run(argv)
