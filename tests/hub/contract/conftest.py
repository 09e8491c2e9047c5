"""The storage contract: one set of tests every hub storage backend passes.

``storage_backend`` yields a :class:`Backend` per parameter: a fresh database and
blob store, and ``open()`` to open (or, after ``close()``, reopen) a
:class:`~sealmem.hub.storage.Storage` over them.  A backend that needs an engine
(PostgreSQL + an S3-compatible store) adds its parameter to ``BACKENDS`` with a
factory that starts it (or skips with the reason when it cannot).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sealmem.hub.backends import open_storage
from sealmem.hub.storage import Quota, Storage


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


def _sqlite(tmp_path: Path) -> Callable[[Quota], Storage]:
    db = f"sqlite://{tmp_path / 'hub' / 'hub.db'}"
    (tmp_path / "hub").mkdir()
    blobs = f"file://{tmp_path / 'blobs'}"
    return lambda quota: open_storage(db, blobs, quota)


#: parameter -> factory of an opener over fresh storage in ``tmp_path``
BACKENDS: dict[str, Callable[[Path], Callable[[Quota], Storage]]] = {"sqlite": _sqlite}


@pytest.fixture(params=sorted(BACKENDS))
def storage_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    backend = Backend(request.param, BACKENDS[request.param](tmp_path))
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def store(storage_backend: Backend) -> Storage:
    return storage_backend.open()
