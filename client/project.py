"""Which project a call is for: the git repository (or directory) it is made in.

``--project`` pins another name per command; :func:`sanitize_project` turns any
name into a valid one (the store's default project when nothing is left).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from ..protocol.record import PROJECT_RE
from .store.memory import DEFAULT_PROJECT

__all__ = ["current_project", "sanitize_project"]


def sanitize_project(name: str) -> str:
    """Lower-case ``name`` and make it match ``PROJECT_RE`` (DEFAULT_PROJECT if nothing is left)."""
    ascii_name = unicodedata.normalize("NFKD", name.strip().casefold())
    ascii_name = ascii_name.encode("ascii", "ignore").decode("ascii")
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", ascii_name)
    cleaned = re.sub(r"^[^a-z0-9]+", "", cleaned)[:64].rstrip("-.")
    return cleaned if cleaned and PROJECT_RE.match(cleaned) else DEFAULT_PROJECT


def current_project(cwd: Path | None = None) -> str:
    """The project for a call made in ``cwd``: the name of its git repository's root
    directory, or outside git the name of ``cwd`` itself (not of a parent), both
    through :func:`sanitize_project`.  ``--project`` pins another name per command."""
    here = Path(cwd if cwd is not None else Path.cwd()).absolute()
    root = next((c for c in (here, *here.parents) if (c / ".git").exists()), here)
    return sanitize_project(root.name)
