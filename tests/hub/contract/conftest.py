"""The storage contract: one set of tests every hub storage backend passes.

``storage_backend`` yields a :class:`Backend` per parameter: a fresh database and
blob store, and ``open()`` to open (or, after ``close()``, reopen) a
:class:`~sealmem.hub.storage.Storage` over them.  SQLite runs twice: with its
group commit (``sqlite``, the fast path) and with one transaction per write
(``sqlite-plain``).  A backend that needs an engine
(PostgreSQL + an S3-compatible store) adds its parameter to ``BACKENDS`` with a
factory that starts it (or skips with the reason when it cannot).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sealmem.hub.storage import Quota, Storage
from sealmem.hub.storage.backends import open_storage


@dataclass
class Backend:
    name: str
    opener: Callable[[Quota], Storage]
    opened: list[Storage] = field(default_factory=list)

    def open(self, quota: Quota | None = None) -> Storage:
        store = self.opener(quota or Quota())
        self.opened.append(store)
        return store

    def close(self) -> None:
        for store in self.opened:
            store.close()


def _sqlite(tmp_path: Path, *, group_commit: bool = True) -> Callable[[Quota], Storage]:
    db = f"sqlite://{tmp_path / 'hub' / 'hub.db'}"
    (tmp_path / "hub").mkdir()
    blobs = f"file://{tmp_path / 'blobs'}"
    return lambda quota: open_storage(db, blobs, quota, group_commit=group_commit)


def _sqlite_plain(tmp_path: Path) -> Callable[[Quota], Storage]:
    return _sqlite(tmp_path, group_commit=False)


def _postgresql_s3(request: pytest.FixtureRequest) -> Callable[[Quota], Storage]:
    """A fresh database of the session's PostgreSQL and a fresh bucket of moto's S3
    server (tests/support/postgres.py and s3.py: skipped without PostgreSQL unless CI)."""
    dsn: str = request.getfixturevalue("pg_dsn")
    blobs: str = request.getfixturevalue("s3_url")
    return lambda quota: open_storage(dsn, blobs, quota)


#: parameter -> factory of an opener over fresh storage in ``tmp_path``
BACKENDS: dict[str, Callable[[Path], Callable[[Quota], Storage]]] = {
    "sqlite": _sqlite,
    "sqlite-plain": _sqlite_plain,
}
#: parameter -> factory of an opener over an engine the test session starts
ENGINES: dict[str, Callable[[pytest.FixtureRequest], Callable[[Quota], Storage]]] = {
    "postgresql+s3": _postgresql_s3,
}


@pytest.fixture(params=sorted([*BACKENDS, *ENGINES]))
def storage_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    name = request.param
    opener = BACKENDS[name](tmp_path) if name in BACKENDS else ENGINES[name](request)
    backend = Backend(name, opener)
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def store(storage_backend: Backend) -> Storage:
    return storage_backend.open()
