"""A store this user cannot write gets the cause and its fix, not write-side guesses
("check that its disk is not mounted read-only and that this user owns the file"), and
``doctor`` no longer reports a WAL store as ``journal_mode is delete`` when it reads it
through an immutable view (a directory this user cannot write, no ``-shm`` yet).

Read-only means a real unprivileged user: the tests run as root, who writes through
file modes, so the store is used from a forked child running as ``nobody``."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import Run, in_process
from tests.support.nobody import NOBODY, as_nobody


@pytest.fixture
def open_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A SEALMEM_HOME outside pytest's private tmp dir, so user ``nobody`` can reach it."""
    root = Path(tempfile.mkdtemp(prefix="sealmem-readonly-"))
    root.chmod(0o755)
    (root / "webshop").mkdir()
    monkeypatch.setenv("SEALMEM_HOME", str(root / "home"))
    monkeypatch.chdir(root / "webshop")
    yield root / "home"
    for path in [root, *root.rglob("*")]:
        with contextlib.suppress(OSError):
            path.chmod(0o700)
    shutil.rmtree(root)


def as_unprivileged(*calls: tuple[str, ...]) -> list[Run]:
    from sealmem.client.cli import main

    def run_all() -> list[Run]:
        runs = []
        for args in calls:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(list(args))
            runs.append(Run(code, out.getvalue(), err.getvalue()))
        return runs

    return as_nobody(run_all)


def closed_store(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A store with one memory, checkpointed and closed (no -wal, no -shm), given to nobody."""
    cli = in_process(capsys, monkeypatch)
    for warm in (("remember", "deploys go through the blue green switch"), ("doctor",)):
        cli(*warm)  # imports every module while root's environment is readable
    store = home / "store.db"
    with contextlib.closing(sqlite3.connect(store)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for extra in ("-wal", "-shm"):
        Path(f"{store}{extra}").unlink(missing_ok=True)
    if os.geteuid() == 0:
        for path in [home, *home.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
    return store


def checks_of(run: Run) -> dict[str, str]:
    lines = [line.split(None, 2) for line in run.out.splitlines()[1:] if line.strip()]
    return {parts[1]: " ".join(parts) for parts in lines if len(parts) == 3}


def test_a_read_only_file_names_its_mode_and_the_chmod(
    open_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = closed_store(open_home, capsys, monkeypatch)
    store.chmod(0o444)
    remembered, doctor = as_unprivileged(("remember", "a new lesson"), ("doctor",))
    assert remembered.code == 1
    assert f"{store} is read-only (mode 444)" in remembered.err
    assert f"chmod u+w '{store}'" in remembered.err
    assert "owns the file" not in remembered.err  # it does: no guessing
    assert "reading still works" in remembered.err
    assert f"chmod u+w '{store}'" in checks_of(doctor)["writable"]


def test_a_read_only_directory_is_named_and_the_store_is_still_wal(
    open_home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = closed_store(open_home, capsys, monkeypatch)
    open_home.chmod(0o500)  # the file stays writable; SQLite cannot make its -wal
    remembered, doctor = as_unprivileged(("remember", "a new lesson"), ("doctor",))
    assert remembered.code == 1
    assert f"its directory {open_home} is not writable" in remembered.err
    assert f"chmod u+w '{open_home}'" in remembered.err
    checks = checks_of(doctor)
    assert checks["wal"].startswith("ok"), checks["wal"]
    assert "journal_mode is delete" not in doctor.out
    assert f"chmod u+w '{open_home}'" in checks["writable"]
    assert store.exists()
