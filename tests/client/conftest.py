"""Fixtures for the local-store tests: a private SEALMEM_HOME, a fake clock, a fresh store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sealmem.client import MemoryStore

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class FakeClock:
    """Milliseconds since the epoch that only move when a test says so (1 ms per read)."""

    def __init__(self, now: int = START_MS) -> None:
        self.now = now

    def __call__(self) -> int:
        self.now += 1
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "home"
    monkeypatch.setenv("SEALMEM_HOME", str(state))
    return state


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


OpenStore = Callable[..., MemoryStore]


@pytest.fixture
def open_store(home: Path, clock: FakeClock) -> Iterator[OpenStore]:
    """``open_store(path=None, **kw)``; every store opened through it is closed afterwards."""
    opened: list[MemoryStore] = []

    def open_(path: Path | None = None, **kw: Any) -> MemoryStore:
        kw.setdefault("clock", clock)
        store = MemoryStore.open(path, **kw)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: OpenStore) -> MemoryStore:
    """A fresh store at ``$SEALMEM_HOME/store.db`` with the fake clock."""
    return open_store()
