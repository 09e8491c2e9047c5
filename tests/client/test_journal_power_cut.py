"""The write journal across a power cut: the sidecar and the store's WAL reach the
disk in no set order, and ``synchronous = NORMAL`` lets a power cut take the last
commits back.  A store that lost only what a power cut may take must not be called
damaged; a store that lost writes the sidecar knew durable still is.

The cut is simulated by putting the two files back out of order: the store files
as they were before the last write, the sidecar as it was after it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store import journal
from sealmem.client.store.connection import DamagedStoreError
from sealmem.client.store.health import doctor

AUTHOR = "me"


def _write(path: Path, text: str) -> None:
    with MemoryStore.open(path, author=AUTHOR) as store:
        store.remember(text, project="webapp")


def _files(path: Path) -> list[Path]:
    return [p for p in (path, Path(f"{path}-wal")) if p.exists()]


def _cut(tmp_path: Path, writes_lost: int) -> Path:
    """A store of 3 notes whose files went back ``writes_lost`` writes, with the
    sidecar of the last write: what the disk may hold after a cut."""
    path = tmp_path / "store.db"
    for i in range(3):
        _write(path, f"note {i} about the build")
    saved = tmp_path / "saved"
    saved.mkdir()
    for f in _files(path):
        shutil.copy2(f, saved / f.name)
    for i in range(writes_lost):
        _write(path, f"the write lost to the cut {i}")
    sidecar = journal.journal_path(path).read_bytes()
    for f in _files(path):
        f.unlink()
    Path(f"{path}-shm").unlink(missing_ok=True)
    for f in saved.iterdir():
        shutil.copy2(f, path.with_name(f.name))
    journal.journal_path(path).write_bytes(sidecar)
    return path


def _legacy(path: Path) -> None:
    """A sidecar without the durable flag (as written when its sync failed)."""
    sidecar = journal.journal_path(path)
    doc = json.loads(sidecar.read_text())
    doc.pop("durable", None)
    sidecar.write_text(json.dumps(doc, sort_keys=True))


def _journal_check(path: Path) -> tuple[bool, str]:
    with MemoryStore.open(path, author=AUTHOR, readonly=True) as store:
        (check,) = [c for c in doctor(store.connection, path) if c.name == "journal"]
    return check.ok, check.detail


def test_an_older_sidecar_one_unsynced_commit_ahead_is_no_damage(tmp_path: Path) -> None:
    """The sidecar of an older sealmem, written before the WAL it counted was synced,
    durable before it: doctor said 'damaged' and every write was refused."""
    path = _cut(tmp_path, writes_lost=1)
    _legacy(path)
    ok, detail = _journal_check(path)
    assert ok, detail
    _write(path, "the next write is taken")
    _tally, damage = journal.read(path)
    assert damage is None


def test_an_older_sidecar_two_commits_ahead_is_still_damage(tmp_path: Path) -> None:
    path = _cut(tmp_path, writes_lost=2)
    _legacy(path)
    ok, detail = _journal_check(path)
    assert not ok
    assert "committed write(s) are gone" in detail


def test_a_durable_sidecar_one_commit_ahead_is_damage(tmp_path: Path) -> None:
    """The sidecar now names only synced commits: a store behind it lost them to
    damage (a bad WAL, an older copy put back), not to a power cut."""
    path = _cut(tmp_path, writes_lost=1)
    assert json.loads(journal.journal_path(path).read_text()).get("durable") is True
    ok, detail = _journal_check(path)
    assert not ok
    assert "1 committed write(s) are gone" in detail
    with pytest.raises(DamagedStoreError):
        _write(path, "refused")


_WRITER = """
import sys
from sealmem.client import MemoryStore
with MemoryStore.open(sys.argv[1], author="me") as store:
    store.remember("the traced write", project="webapp")
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_the_wal_is_synced_before_the_sidecar_counts_the_commit(tmp_path: Path) -> None:
    """In a real process, traced: after the commit's last write to the WAL, an fsync
    of the WAL comes before the rename that puts the new sidecar in place."""
    path = tmp_path / "store.db"
    _write(path, "a store to write into")
    trace = tmp_path / "trace.txt"
    run = subprocess.run(
        ["strace", "-f", "-y", "-qq", "-o", str(trace),
         "-e", "trace=pwrite64,write,fsync,fdatasync,rename,renameat,renameat2",
         sys.executable, "-c", _WRITER, str(path)],
        capture_output=True, text=True, timeout=120, env=os.environ,
    )  # fmt: skip
    if run.returncode != 0 and "ptrace" in run.stderr:
        pytest.skip(f"strace cannot trace here: {run.stderr.strip()}")
    assert run.returncode == 0, run.stderr
    lines = trace.read_text().splitlines()
    wal = f"{path}-wal>"
    sidecar = journal.journal_path(path).name
    renames = [i for i, x in enumerate(lines) if re.search(r"rename", x) and sidecar in x]
    assert renames, "the sidecar was not written"
    last = renames[-1]
    wal_writes = [i for i, x in enumerate(lines[:last]) if "write" in x and wal in x]
    assert wal_writes, "the commit wrote nothing to the WAL"
    synced = [
        i
        for i, x in enumerate(lines[:last])
        if i > wal_writes[-1] and re.search(r"\bf(data)?sync\(", x) and wal in x
    ]
    assert synced, "the sidecar counted a commit the WAL had not synced"


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
    _write(real, "a note on the real disk")
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
