"""The file locks (sync, invite registry, hub data directory) hold across processes.

They go through ``filelock`` (``flock`` here, ``LockFileEx`` on Windows).  A lock
held by another process is waited for, then refused with the same message as
before; a hub's lock is released by ``close`` whichever thread calls it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sealmem.client.sync.engine import sync_lock
from sealmem.hub.storage import StorageError
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.protocol.errors import StoreError

_HOLD = """
import sys, time
from pathlib import Path
from sealmem.client.sync.engine import sync_lock
with sync_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.mark.slow
def test_a_sync_lock_held_by_another_process_is_refused_by_name(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with (
            pytest.raises(StoreError, match=r"another sync of .* has held .*sync\.lock"),
            sync_lock(tmp_path, timeout_s=0.3),
        ):
            pass
    finally:
        holder.communicate("", timeout=30)
    assert holder.returncode == 0
    with sync_lock(tmp_path, timeout_s=5):  # the holder exited: free again
        assert (tmp_path / "sync.lock").stat().st_mode & 0o777 == 0o600


def test_a_second_hub_on_one_data_directory_is_refused(tmp_path: Path) -> None:
    first = SQLiteStorage(tmp_path)
    try:
        with pytest.raises(StorageError, match="another hub is serving"):
            SQLiteStorage(tmp_path)
    finally:
        closer = threading.Thread(target=first.close)  # as a server's shutdown may
        closer.start()
        closer.join()
    second = SQLiteStorage(tmp_path)  # released by close() on the other thread
    second.close()
