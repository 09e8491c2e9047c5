"""Where sealmem keeps its state, who the local member is, which project is current.

``SEALMEM_HOME`` relocates everything (store, identity, keys, config), so tests
and several members can live on one machine.  Without it, the per-user data
directory of the platform is used (``platformdirs.user_data_dir("sealmem")``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import unicodedata
from pathlib import Path

import platformdirs

from sealmem.client.memory import DEFAULT_PROJECT
from sealmem.protocol.errors import StoreError
from sealmem.protocol.record import MEMBER_RE, PROJECT_RE

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


def _new_member_id() -> str:
    # Same shape as a member key's kid (lowercase base32 of 16 bytes), so the
    # crypto layer can replace this without changing what ids look like.
    return base64.b32encode(os.urandom(16)).decode("ascii").rstrip("=").lower()


def local_author(home_dir: Path) -> str:
    """The local member id, created once and persisted in ``<home>/identity.json``."""
    path = Path(home_dir) / _IDENTITY
    if not path.exists():
        Path(home_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
        body = json.dumps({"member_id": _new_member_id()}, indent=2) + "\n"
        tmp = path.with_name(f".{_IDENTITY}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        try:
            os.write(fd, body.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # atomic, and never overwrites a concurrent winner
        except FileExistsError:
            pass
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        member = data["member_id"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(
            f"the identity file {path} is unreadable ({exc}); restore it from a backup "
            "or move it aside to create a new local identity"
        ) from exc
    if not isinstance(member, str) or not MEMBER_RE.match(member):
        raise StoreError(
            f"the identity file {path} holds an invalid member id {member!r}; restore it "
            "from a backup or move it aside to create a new local identity"
        )
    return member


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
    """The project for a call made in ``cwd``: its git root's name, else its own name."""
    here = Path(cwd if cwd is not None else Path.cwd()).absolute()
    root = _git_root(here) or here
    return sanitize_project(root.name)
