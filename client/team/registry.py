"""The invites this admin issued: ``invites.json`` beside ``team.json`` in its home.

Admin-only, never published.  Each change holds an exclusive lock on
``invites.lock`` while it reads, changes and atomically rewrites the file, so
two commands of one admin cannot lose an invite.  The rules that read it live in
:mod:`sealmem.protocol.admission`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import filelock

from ...protocol.admission import MAX_INVITES, InviteRecord
from ...protocol.errors import InputError, Rejected
from ..fsutil import atomic_write

__all__ = ["REGISTRY_FILE", "load_registry", "update_registry"]

REGISTRY_FILE = "invites.json"
_FORMAT = "sealmem/invites/v1"
Registry = dict[str, InviteRecord]


def load_registry(home: Path) -> Registry:
    """The invites issued from ``home`` (empty when none was)."""
    path = Path(home) / REGISTRY_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InputError(f"cannot read the invite registry {path}: {exc.strerror}") from exc
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
            raise ValueError(f"format must be {_FORMAT!r}")
        items = doc.get("invites")
        if not isinstance(items, list) or len(items) > MAX_INVITES:
            raise ValueError("'invites' must be a list")
        records = [InviteRecord.from_json(item) for item in items if isinstance(item, dict)]
        if len(records) != len(items):
            raise ValueError("every invite must be a JSON object")
    except (ValueError, Rejected) as exc:
        raise InputError(
            f"the invite registry {path} is damaged ({exc}); move it away to start a new "
            "one (invites issued before cannot be approved then)"
        ) from exc
    return {r.invite_id: r for r in records}


def _save(home: Path, registry: Mapping[str, InviteRecord]) -> None:
    items = [r.to_json() for r in sorted(registry.values(), key=lambda r: r.created_at)]
    text = json.dumps({"format": _FORMAT, "invites": items}, indent=2, sort_keys=True)
    atomic_write(Path(home) / REGISTRY_FILE, (text + "\n").encode("utf-8"), mode=0o600)


@contextmanager
def _locked(home: Path) -> Iterator[None]:
    lock = filelock.FileLock(Path(home) / "invites.lock", mode=0o600, thread_local=False)
    try:
        lock.acquire()
    except OSError as exc:
        raise InputError(
            f"cannot lock {lock.lock_file}: {exc.strerror or exc}; check that {home} is writable"
        ) from exc
    try:
        yield
    finally:
        lock.release()


def update_registry(home: Path, change: Callable[[Registry], Registry]) -> Registry:
    """Apply ``change`` to the stored registry under the lock; store and return the result."""
    with _locked(home):
        registry = change(load_registry(home))
        _save(home, registry)
    return registry
