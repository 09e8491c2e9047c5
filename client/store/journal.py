"""A small journal beside the store that notices committed writes gone missing.

SQLite drops a damaged write-ahead-log frame *and every frame after it* when it
next opens the store, silently: memories committed minutes ago are gone and the
store still looks sound (``integrity_check`` says ok).  To notice, every write
transaction counts itself in the ``meta`` row ``commits``, and after it commits the
count (with the number of memories and the time) is copied to a sidecar file,
``store.db.counts.json``.  A store whose ``commits`` is *below* the sidecar's lost
committed writes: only damage (a bad WAL, an older backup copied back) takes a
counter back.

The store runs ``synchronous = NORMAL``, so a power cut may take the last commits
back: the sidecar is written only *after* the WAL holding the counted commit was
fsynced, and says so (``"durable": true``); one without the flag (the sync failed)
may run one commit ahead, so for it a lag of one commit is tolerated.  The sidecar
itself is not fsynced: one that comes back older only makes the store look newer.

The sidecar is read before the store (a write committed in between only makes the
store look newer), and ignored when it belongs to another store (``store_id``
differs: a new or recovered store adopts it).  A store found damaged gets a *marker*
in the sidecar: its connections refuse writes and reading goes on, until ``sealmem
recover`` or a restore into a new store replaces it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
import stat
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..clock import now_ms

__all__ = [
    "COMMITS_KEY",
    "RECOVER_HINT",
    "Damage",
    "Tally",
    "count_commit",
    "damaged_message",
    "hold",
    "holding_path",
    "inspect",
    "journal_path",
    "mark",
    "measure",
    "put",
    "read",
    "record",
    "refusal",
    "sync_flags",
    "unhold",
    "when",
]

_SUFFIX = ".counts.json"
#: beside the store while 'sealmem recover' salvages it in place: writes are refused
HOLD_SUFFIX = ".salvaging"
COMMITS_KEY = "commits"
#: A sidecar is a few hundred bytes; a larger file is not one (it is read on every write).
MAX_SIDECAR_BYTES = 64 * 1024
#: Times in the sidecar are ms since 1970 and at most this (the year 6429, as an HLC wall).
_MAX_MS = (1 << 47) - 1
#: The way out of a damaged store, in every message that finds one.
RECOVER_HINT = (
    "run 'sealmem recover' to salvage what is readable into a new store (the damaged "
    "file is kept beside it), or move the store aside and restore a backup with "
    "'sealmem import <export.json>'"
)


@dataclass(frozen=True)
class Tally:
    """What the store held after a write: its id, write count and memory rows, and when."""

    store_id: str | None
    commits: int
    memories: int
    at: int
    #: written after the store's WAL was fsynced: the store cannot lose these commits
    #: to a power cut (False: the sync failed)
    durable: bool = False


@dataclass(frozen=True)
class Damage:
    """The marker of a store known to be damaged: why, and since when it is known."""

    why: str
    detected_at: int


def journal_path(store: Path) -> Path:
    return store.with_name(store.name + _SUFFIX)


def when(ms: int) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ms / 1000))
    except (OverflowError, OSError, ValueError):  # a time no clock tells: say so, never fail
        return f"an unknown time ({ms} ms)"


def _int(value: object, top: float = float("inf")) -> int:
    """A count (or a time in ms, ``top`` :data:`_MAX_MS`) from the sidecar, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise ValueError(f"not a sidecar's number: {value!r}")
    return value


def _load(path: Path) -> object:
    """The sidecar's JSON.  Only a regular file of at most :data:`MAX_SIDECAR_BYTES` is
    read: a FIFO put there would block every write, ``/dev/zero`` would never end."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SIDECAR_BYTES:
            raise ValueError("not a sidecar")
        return json.loads(fh.read(MAX_SIDECAR_BYTES + 1).decode("utf-8"))


def count_commit(conn: sqlite3.Connection) -> None:
    """Inside a write transaction: count it in the store (``meta.commits``)."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) "
        "DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        (COMMITS_KEY,),
    )


def measure(conn: sqlite3.Connection) -> Tally:
    """The store's tally now (outside a transaction: the newest committed state)."""
    meta = dict(
        conn.execute("SELECT key, value FROM meta WHERE key IN ('store_id', ?)", (COMMITS_KEY,))
    )
    commits = str(meta.get(COMMITS_KEY, "0"))
    # the row count the store keeps: one read, whatever the store's size
    (memories,) = conn.execute("SELECT memories FROM store_counts").fetchone()
    return Tally(
        store_id=None if meta.get("store_id") is None else str(meta["store_id"]),
        commits=int(commits) if commits.isdigit() else 0,
        memories=int(memories),
        at=now_ms(),
    )


def read(store: Path) -> tuple[Tally | None, Damage | None]:
    """The sidecar's tally and damage marker; (None, None) when absent or unreadable."""
    try:
        doc = _load(journal_path(store))
        if not isinstance(doc, dict) or not isinstance(doc["store_id"], str | None):
            raise TypeError("not a sidecar")
        tally = Tally(
            store_id=doc["store_id"],
            commits=_int(doc["commits"]),
            memories=_int(doc["memories"]),
            at=_int(doc["at"], _MAX_MS),
            durable=doc.get("durable") is True,
        )
        marker = doc.get("damaged")
        damage = None
        if isinstance(marker, dict):
            damage = Damage(str(marker["why"]), _int(marker["detected_at"], _MAX_MS))
    except (OSError, ValueError, KeyError, TypeError):
        return None, None
    return tally, damage


def _write(store: Path, tally: Tally, damage: Damage | None) -> None:
    doc = asdict(tally) | {"damaged": None if damage is None else asdict(damage)}
    target = journal_path(store)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(doc, sort_keys=True))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def sync_flags(system: str = os.name) -> int:
    """How to open a file only to fsync it: read-only on POSIX; on Windows
    ``os.fsync`` (``_commit``) refuses a read-only handle, so read-write there."""
    return os.O_RDWR if system == "nt" else os.O_RDONLY


def _sync(store: Path) -> bool:
    """Make every commit of the store durable (fsync its WAL, or the file without
    one); False when that failed.  SQLite keeps the WAL beside the file a symlinked
    store path points to, so the path is resolved first."""
    real = Path(os.path.realpath(store))
    for path in (Path(f"{real}-wal"), real):
        try:
            fd = os.open(path, sync_flags())
        except FileNotFoundError:
            continue
        except OSError:
            return False
        try:
            os.fsync(fd)
        except OSError:
            return False
        finally:
            os.close(fd)
        return True
    return False


def record(conn: sqlite3.Connection, store: Path) -> None:
    """After a commit: make it durable, then copy the store's tally to the sidecar.
    Never raises: the write it follows is committed, and a sidecar that cannot be
    written only stays older."""
    with contextlib.suppress(OSError, sqlite3.Error):
        _tally, damage = read(store)
        if damage is None:
            _write(store, replace(measure(conn), durable=_sync(store)), None)


def put(store: Path, tally: Tally, damage: Damage | None) -> None:
    """Write the sidecar as given (to put back one read before); never raises."""
    with contextlib.suppress(OSError):
        _write(store, tally, damage)


def mark(store: Path, tally: Tally, why: str) -> Damage:
    """Record that the store is damaged (kept until a new store replaces it)."""
    damage = Damage(why, now_ms())
    put(store, tally, damage)
    return damage


def _lost(before: Tally, now: Tally) -> str | None:
    """Why ``now`` lost writes that ``before`` saw committed, or None."""
    # a sidecar written after a failed sync may count one commit the store had not synced
    slack = 0 if before.durable else 1
    if before.store_id != now.store_id or now.commits + slack >= before.commits:
        return None
    writes = before.commits - now.commits
    missing = before.memories - now.memories
    what = f"{missing} memories missing" if missing > 0 else "memories changed since then lost"
    return (
        f"damaged: {what} since {when(before.at)} ({writes} committed write(s) are gone: "
        f"its journal counted {before.memories} memories after write {before.commits}, "
        f"the store holds {now.memories} at write {now.commits})"
    )


def inspect(conn: sqlite3.Connection, store: Path, *, adopt: bool) -> Damage | None:
    """Compare the store with its journal; mark and return the damage found, if any.
    ``adopt``: write the store's tally when the sidecar is absent or another store's."""
    before, damage = read(store)  # first the sidecar, then the store: see the docstring
    now = measure(conn)
    if before is None or before.store_id != now.store_id:
        if adopt:
            put(store, replace(now, durable=_sync(store)), None)
        return None
    if damage is not None:
        return damage
    why = _lost(before, now)
    return None if why is None else mark(store, before, why)


def holding_path(store: Path) -> Path:
    return store.with_name(store.name + HOLD_SUFFIX)


def hold(store: Path) -> None:
    """Refuse every write to ``store`` until :func:`unhold` (a salvage in place): a file
    of its own, as a writer that committed just before rewrites the sidecar."""
    fd = os.open(holding_path(store), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"since": now_ms()}))


def unhold(store: Path) -> None:
    with contextlib.suppress(OSError):
        holding_path(store).unlink(missing_ok=True)


def refusal(store: Path) -> str | None:
    """The refusal of writes to a store marked damaged (by any process), or being
    salvaged, or None."""
    if os.path.lexists(holding_path(store)):
        return (
            f"the store {store} is being salvaged by 'sealmem recover'; writing is refused "
            "until it finishes (reading still works): run the command again then. If no "
            f"'sealmem recover' is running (it was killed), delete {holding_path(store)}"
        )
    _tally, damage = read(store)
    return None if damage is None else damaged_message(store, damage)


def damaged_message(store: Path, damage: Damage) -> str:
    """The one line that refuses a write to a damaged store, with the fix."""
    return (
        f"the store {store} is {damage.why}; found {when(damage.detected_at)}. Writing is "
        f"refused until it is mended, reading still works: {RECOVER_HINT}; team memories "
        "come back with 'sealmem sync' afterwards"
    )
