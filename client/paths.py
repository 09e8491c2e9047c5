"""Where sealmem keeps its state and who the local member is.

``SEALMEM_HOME`` relocates everything (store, identity, keys, config), so tests
and several members can live on one machine.  Without it, the per-user data
directory of the platform is used (``platformdirs.user_data_dir("sealmem")``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import platformdirs

from ..protocol.errors import StoreError
from ..protocol.record import MEMBER_RE
from .fsutil import atomic_write
from .identity import member_kid

__all__ = [
    "HOME_ENV",
    "ensure_home",
    "home",
    "local_author",
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
    home_dir = Path(home_dir)
    home_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
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
    if member != kid:  # a key that went missing is not replaced silently
        raise StoreError(
            f"the identity file {path} names member {member}, but the member key is {kid}; "
            "memories written as the old id would no longer be shared. Restore the old key "
            "or move the identity file aside to continue as the new member"
        )
    return kid
