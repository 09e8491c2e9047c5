"""The store's write guards after a recovery that did not finish: a writer that kept
the store open while 'sealmem recover' held it must take writes again once the
salvage gave up and put the journal back (the store was never replaced)."""

from __future__ import annotations

import subprocess
import sys
import time
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


def test_the_wal_synced_before_the_sidecar_is_the_one_sqlite_writes_through_a_symlink(
    tmp_path: Path,
) -> None:
    """A store path that is a symlink (a home whose store lives on another disk): SQLite
    writes its WAL beside the link's target, so the journal must fsync that one before
    it calls the count durable.  Before, it looked for the WAL beside the link, found
    none, fsynced the main file instead and still wrote ``"durable": true``: after a
    power cut that took unsynced WAL frames, the store would be called damaged."""
    real = tmp_path / "disk" / "store.db"
    real.parent.mkdir()
    _store_at(real)
    link = tmp_path / "home" / "store.db"
    link.parent.mkdir()
    link.symlink_to(real)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from sealmem.client import MemoryStore\n"
        "opened = []\n"
        "sys.addaudithook(lambda event, args: opened.append(str(args[0]))"
        " if event == 'open' and str(args[0]).endswith('-wal') else None)\n"
        f"with MemoryStore.open(Path({str(link)!r}), author='me') as store:\n"
        "    del opened[:]\n"
        "    store.remember('a note written through the link', project='webapp')\n"
        "print('\\n'.join(opened))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert f"{real}-wal" in done.stdout.split("\n"), done.stdout
    assert journal.read(link)[0] is not None


def _store_at(path: Path) -> None:
    with MemoryStore.open(path, author=AUTHOR) as store:
        store.remember("a note on the real disk", project="webapp")


def test_a_writer_s_sidecar_update_never_lifts_a_salvage_hold(tmp_path: Path) -> None:
    """Another process writes without pause while 'sealmem recover' holds the store:
    its sidecar update after each commit (read, fsync, replace: milliseconds) must not
    lift the hold.  Before, the hold was a mark in that same sidecar, and a writer that
    read the sidecar just before the mark wrote it back without: most holds were gone
    within 50 ms, and the next writes landed in the file being salvaged (then lost)."""
    path = tmp_path / "store.db"
    _store_at(path)
    script = (
        "from pathlib import Path\n"
        "from sealmem.client import MemoryStore\n"
        "from sealmem.client.store.connection import StoreError\n"
        f"with MemoryStore.open(Path({str(path)!r}), author='me') as store:\n"
        "    print('ready', flush=True)\n"
        "    for i in range(100000):\n"
        "        try:\n"
        "            store.remember(f'note {i} from the busy writer', project='webapp')\n"
        "        except StoreError:\n"
        "            pass\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
        lifted = 0
        for _ in range(20):
            src = connect_readonly(path)
            try:
                before = _hold_writers(path, src)
                time.sleep(0.05)
                lifted += journal.refusal(path) is None
                _release(path, before)
            finally:
                src.close()
            time.sleep(0.02)
    finally:
        writer.kill()
        writer.wait(timeout=30)
        if writer.stdout is not None:
            writer.stdout.close()
    assert lifted == 0, f"{lifted} of 20 holds were lifted by the writer"
