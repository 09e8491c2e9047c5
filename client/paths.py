"""Where sealmem keeps its state, who the local member is, which project is current.

``SEALMEM_HOME`` relocates everything (store, identity, keys, config), so tests
and several members can live on one machine.  Without it, the per-user data
directory of the platform is used (``platformdirs.user_data_dir("sealmem")``).
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path

import platformdirs

from ..protocol.encoding import KID_RE
from ..protocol.errors import StoreError
from ..protocol.record import MEMBER_RE, PROJECT_RE
from .fsutil import atomic_write
from .store.memory import DEFAULT_PROJECT

__all__ = [
    "HOME_ENV",
    "current_project",
    "ensure_home",
    "home",
    "local_author",
    "sanitize_project",
    "store_path",
]

HOME_ENV = "SEALMEM_HOME"
_IDENTITY = "identity.json"


def home() -> Path:
    """The state directory: ``$SEALMEM_HOME`` or the platform's user data dir."""
    value = os.environ.get(HOME_ENV, "").strip()
    if value:
        return Path(value).expanduser().absolute()
    return Path(platformdirs.user_data_dir("sealmem", appauthor=False))


def ensure_home() -> Path:
    """Create the state directory (mode 0700) if needed and return it."""
    path = home()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
        if info.st_uid == os.getuid() and info.st_mode & 0o077:
            os.chmod(path, 0o700)  # keys and memories live here: owner only
    except OSError as exc:
        raise StoreError(
            f"cannot create the sealmem home {path}: {exc.strerror}; set {HOME_ENV} "
            "to a writable directory"
        ) from exc
    return path


def store_path(home_dir: Path) -> Path:
    """The memory store inside a home directory."""
    return Path(home_dir) / "store.db"


def local_author(home_dir: Path) -> str:
    """The local member id: the kid of the member key in ``<home>/keys/`` (made on first use).

    ``<home>/identity.json`` records that id the first time; a key swapped later is
    refused, since memories written under the old id would silently stop being shared.
    """
    from .team.identity import has_member_key, member_kid  # crypto-layer key

    home_dir = Path(home_dir)
    home_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    new_key = not has_member_key(home_dir)
    kid = member_kid(home_dir)
    path = home_dir / _IDENTITY
    if not path.exists():
        atomic_write(path, (json.dumps({"member_id": kid}, indent=2) + "\n").encode(), mode=0o600)
    try:
        member = json.loads(path.read_text(encoding="utf-8"))["member_id"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(
            f"the identity file {path} is unreadable ({exc}); move it aside to record "
            f"the member key's id {kid} again"
        ) from exc
    if not isinstance(member, str) or not MEMBER_RE.match(member):
        raise StoreError(f"the identity file {path} holds an invalid member id {member!r}")
    if member != kid and new_key and not KID_RE.fullmatch(member):
        # An id from before member keys existed (not a kid): it was never shared, so the
        # key takes over.  A kid recorded here was a member key's: a key that went missing
        # is not replaced silently (the team knows this member by the old one).
        atomic_write(path, (json.dumps({"member_id": kid}, indent=2) + "\n").encode(), mode=0o600)
    elif member != kid:
        raise StoreError(
            f"the identity file {path} names member {member}, but the member key is {kid}; "
            "memories written as the old id would no longer be shared. Restore the old key "
            "or move the identity file aside to continue as the new member"
        )
    return kid


def sanitize_project(name: str) -> str:
    """Lower-case ``name`` and make it match ``PROJECT_RE`` (DEFAULT_PROJECT if nothing is left)."""
    ascii_name = unicodedata.normalize("NFKD", name.strip().casefold())
    ascii_name = ascii_name.encode("ascii", "ignore").decode("ascii")
    cleaned = re.sub(r"[^a-z0-9._-]+", "-", ascii_name)
    cleaned = re.sub(r"^[^a-z0-9]+", "", cleaned)[:64].rstrip("-.")
    return cleaned if cleaned and PROJECT_RE.match(cleaned) else DEFAULT_PROJECT


def _git_root(start: Path) -> Path | None:
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def current_project(cwd: Path | None = None) -> str:
    """The project for a call made in ``cwd``: the name of its git repository's root
    directory, or outside git the name of ``cwd`` itself (not of a parent), both
    through :func:`sanitize_project`.  ``--project`` pins another name per command."""
    here = Path(cwd if cwd is not None else Path.cwd()).absolute()
    root = _git_root(here) or here
    return sanitize_project(root.name)
