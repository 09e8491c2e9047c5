"""The store's write guards after a recovery that did not finish: a writer that kept
the store open while 'sealmem recover' held it must take writes again once the
salvage gave up and put the journal back (the store was never replaced)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store import journal
from sealmem.client.store.connection import DamagedStoreError, connect_readonly
from sealmem.client.store.recover import _hold_writers, _release

AUTHOR = "me"


def test_a_writer_takes_writes_again_after_a_salvage_that_gave_up(tmp_path: Path) -> None:
    """recover marks the store, takes its write lock once, then fails (Ctrl-C, a full
    disk, another writer holding the lock) and puts the journal back: an MCP server
    that tried to write meanwhile was refused, and must not stay refused for ever."""
    path = tmp_path / "store.db"
    with MemoryStore.open(path, author=AUTHOR) as server:
        server.remember("a note before the salvage", project="webapp")
        src = connect_readonly(path)
        try:
            before = _hold_writers(path, src)
            with pytest.raises(DamagedStoreError, match="being salvaged"):
                server.remember("a note during the salvage", project="webapp")
            _release(path, before)  # the salvage failed: the same file stays in place
        finally:
            src.close()
        assert journal.read(path)[1] is None
        server.remember("a note after the salvage gave up", project="webapp")
        assert len(server.recent(limit=10, all_projects=True)) == 2
