"""The local member key: who this machine is to the team (DESIGN §4).

One :class:`~sealmem.crypto.MemberKey` lives in ``<home>/keys/member.key``
(mode 0600), created on first use.  Its kid is the local member id
(:func:`sealmem.client.paths.local_author`).  A key file may be sealed with a
passphrase; the passphrase then comes from ``$SEALMEM_PASSPHRASE`` (for
scripts) or is passed in by the CLI, never from the command line itself.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..protocol.encoding import KID_RE
from ..protocol.errors import KeyFileError

if TYPE_CHECKING:  # crypto (nacl) loads only where a key is made or opened, not for the kid
    from ..crypto import MemberKey

__all__ = [
    "KEY_FILE",
    "PASSPHRASE_ENV",
    "import_member_key",
    "load_member_key",
    "member_key_path",
    "member_kid",
]

KEY_FILE = "member.key"
PASSPHRASE_ENV = "SEALMEM_PASSPHRASE"  # noqa: S105 - the name of a variable


def member_key_path(home_dir: Path) -> Path:
    """Where the member key of a sealmem home lives."""
    return Path(home_dir) / "keys" / KEY_FILE


def _keys_dir(home_dir: Path) -> Path:
    keys = Path(home_dir) / "keys"
    keys.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(keys, 0o700)
    return keys


def load_member_key(
    home_dir: Path, *, create: bool = True, passphrase: str | None = None
) -> MemberKey:
    """The member key of ``home_dir``; generated (unsealed) on first use when ``create``."""
    from ..crypto import MemberKey

    path = member_key_path(home_dir)
    if not path.exists():
        if not create:
            raise KeyFileError(
                f"no member key at {path}; run 'sealmem team join' or 'sealmem team create'"
            )
        keys = _keys_dir(home_dir)
        key = MemberKey.generate()
        tmp = keys / f".{KEY_FILE}.{os.getpid()}.new"
        key.save(tmp)
        try:
            os.link(tmp, path)  # never overwrites a key a concurrent process created first
        except FileExistsError:
            pass
        else:
            return key
        finally:
            tmp.unlink(missing_ok=True)
    if passphrase is None:
        passphrase = os.environ.get(PASSPHRASE_ENV) or None
    return MemberKey.load(path, passphrase=passphrase)


def import_member_key(home_dir: Path, key: MemberKey) -> MemberKey:
    """Install ``key`` (from an admin-issued bundle) as this home's member key.

    Refuses to replace a different existing key: memories written under it
    would no longer be publishable.
    """
    path = member_key_path(home_dir)
    if path.exists():
        current = load_member_key(home_dir, create=False)
        if current.kid == key.kid:
            return current
        raise KeyFileError(
            f"this sealmem home already has member key {current.kid}; the bundle holds "
            f"{key.kid}. Use a fresh SEALMEM_HOME for the issued key, or move {path} aside "
            "(memories written under the old key will no longer be shared)"
        )
    _keys_dir(home_dir)
    key.save(path)
    return key


def member_kid(home_dir: Path) -> str:
    """The local member id (the key's kid), read without unsealing; creates the key if absent."""
    path = member_key_path(home_dir)
    if not path.exists():
        return load_member_key(home_dir).kid
    try:
        kid = json.loads(path.read_bytes())["kid"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise KeyFileError(f"key file {path} is unreadable or corrupt ({exc})") from exc
    if not isinstance(kid, str) or KID_RE.fullmatch(kid) is None:
        raise KeyFileError(f"key file {path} names an invalid member id")
    return kid
