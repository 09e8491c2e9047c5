"""Open a hub's storage from URLs: which backend serves metadata, which keeps blobs.

Metadata (``--db``, ``SEALMEM_HUB_DB``):

- ``sqlite:///abs/path/hub.db``, or a plain path: a database file; a path that
  is a directory (or does not end in ``.db``) is a data directory holding
  ``hub.db`` (the embedded default, the layout of ``--data DIR``);
- ``postgresql://...`` (or ``postgres://``): PostgreSQL (:mod:`.postgres`).

Blobs (``--blobs``, ``SEALMEM_HUB_BLOBS``):

- ``file:///abs/dir``, or a plain path: a directory (:class:`BlobDir`);
  by default ``blobs/`` beside an SQLite database;
- ``s3://bucket/prefix?endpoint=...``: an S3-compatible bucket (:mod:`.s3`).

An unknown scheme is refused by name, with the known ones.  ``group_commit``
(:func:`open_storage`) chooses the fast path of a backend that has one: SQLite
commits the writes arriving together once (True, the default) or each write
alone (False); PostgreSQL has one way.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from ...protocol.errors import InputError
from . import Quota, Storage
from .blobs import BlobDir, BlobStore
from .sqlite import DB_FILE, SQLiteStorage

__all__ = ["default_blobs_url", "open_blobs", "open_storage", "shown_url"]

_SQLITE = ("", "sqlite")
_POSTGRES = ("postgresql", "postgres")


def _scheme(url: str) -> str:
    """The URL's scheme, or "" for a plain path (a Windows drive letter is a path)."""
    try:
        scheme = urlsplit(url).scheme
    except ValueError as exc:  # e.g. an unclosed IPv6 bracket; the URL is not repeated
        raise InputError(f"a storage URL that is not a URL ({exc})") from None
    return "" if len(scheme) <= 1 else scheme.lower()


def _path(url: str, what: str) -> Path:
    parts = urlsplit(url)
    if _scheme(url) == "":
        return Path(url).expanduser()
    if parts.netloc not in ("", "localhost") or not parts.path:
        raise InputError(
            f"{what} URL {url!r} must name a local path, e.g. {parts.scheme}:///srv/sealmem/..."
        )
    return Path(unquote(parts.path))


#: the start of a libpq ``key=value`` connection string
_CONNINFO = re.compile(r"\s*[A-Za-z_]+\s*=")


def sqlite_location(url: str) -> tuple[Path, str]:
    """(data directory, database file name) of an SQLite URL or path."""
    if _scheme(url) == "" and _CONNINFO.match(url):
        raise InputError(
            f"--db {shown_url(url)}: a key=value connection string is not supported; give "
            "a postgresql://USER@HOST/DB URL (the password in PGPASSWORD or ~/.pgpass)"
        )
    path = _path(url, "--db")
    if path.is_dir() or path.suffix != ".db":
        return path, DB_FILE
    return path.parent, path.name


def shown_url(url: str) -> str:
    """``url`` as messages and logs may show it: without a password (in the user
    part or the query); a string that is not a URL but names one shows as nothing."""
    hidden = "(the configured database)"
    try:
        if _scheme(url) == "" and "password" in url.lower():  # e.g. libpq's key=value
            return hidden
        parts = urlsplit(url)
        if "password" in parts.query.lower():
            parts = parts._replace(query="")
        if parts.password is not None:
            host = parts.hostname or ""
            port = f":{parts.port}" if parts.port else ""
            parts = parts._replace(netloc=f"{parts.username}@{host}{port}")
    except ValueError:  # no URL (a bad port, an unclosed IPv6 bracket): show none of it
        return hidden
    return urlunsplit(parts)


def _unknown(what: str, url: str, known: tuple[str, ...]) -> InputError:
    names = ", ".join(f"{s}://" for s in sorted(known) if s)
    shown = shown_url(url)  # never echo a password
    return InputError(f"{what} {shown!r}: unknown scheme {_scheme(url)!r}; use one of {names}")


def default_blobs_url(db_url: str) -> str:
    """Blobs beside an SQLite database; other metadata backends need ``--blobs``."""
    if _scheme(db_url) in _SQLITE:
        data_dir, _ = sqlite_location(db_url)
        return str(data_dir / "blobs")
    raise InputError(
        f"--db {_scheme(db_url)}://... keeps no blobs: give --blobs "
        "(file:///dir or s3://bucket/prefix?endpoint=...)"
    )


def open_blobs(url: str) -> BlobStore:
    scheme = _scheme(url)
    if scheme in ("", "file"):
        return BlobDir(_path(url, "--blobs"))
    if scheme != "s3":
        raise _unknown("--blobs", url, ("file", "s3"))
    from .s3 import S3Blobs  # needs the hub-scale extra: imported when asked for

    blobs = S3Blobs(url)
    blobs.check()  # a missing bucket or bad credentials fail at start, by name
    return blobs


def open_storage(
    db_url: str,
    blobs_url: str | None = None,
    quota: Quota | None = None,
    *,
    group_commit: bool = True,
) -> Storage:
    """Metadata over blobs, both from URLs (blobs default: beside an SQLite database);
    ``group_commit``: see the module docstring."""
    scheme = _scheme(db_url)
    if scheme not in (*_SQLITE, *_POSTGRES):
        raise _unknown("--db", db_url, (*_SQLITE, *_POSTGRES))
    blobs = open_blobs(blobs_url or default_blobs_url(db_url))
    try:
        if scheme in _SQLITE:
            data_dir, name = sqlite_location(db_url)
            return SQLiteStorage(
                data_dir, blobs, quota=quota, db_name=name, group_commit=group_commit
            )
        from .postgres import PgStorage  # needs the hub-scale extra

        return PgStorage(db_url, blobs, quota)
    except BaseException:
        blobs.close()
        raise
