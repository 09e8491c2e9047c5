"""Defaults that never lose data: export never overwrites, read-only stores can be read,
an empty or damaged store is refused instead of replaced, ``recover`` salvages one.

Real store files throughout; read-only means a real unprivileged user (root writes
through file modes, so as root the reading runs in a forked child as ``nobody``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.cli import Run, in_process
from tests.support.nobody import NOBODY, as_nobody

PAGE = 4096


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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


def _unprivileged(calls: list[tuple[str, ...]]) -> list[Run]:
    """Run each CLI call in-process as an unprivileged user (a forked child as root)."""
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


def _give_to_nobody(paths: list[Path]) -> None:
    if os.geteuid() == 0:
        for path in paths:
            os.chown(path, NOBODY, NOBODY)


# -- export ------------------------------------------------------------------------


def test_export_refuses_to_overwrite_an_existing_file_unless_forced(
    cli: Callable[..., Run], tmp_path: Path
) -> None:
    assert cli("remember", "the staging db is rebuilt nightly").code == 0
    backup = tmp_path / "backup.json"
    backup.write_text('{"precious": "an older backup"}\n')

    refused = cli("export", "-o", str(backup))

    assert refused.code == 1
    assert "already exists" in refused.err
    assert "--force" in refused.err
    assert backup.read_text() == '{"precious": "an older backup"}\n'

    forced = cli("export", "-o", str(backup), "--force", "--json")
    assert forced.code == 0, forced.err
    assert forced.json()["memories"] == 1
    contents = [m["record"]["content"] for m in json.loads(backup.read_text())["memories"]]
    assert contents == ["the staging db is rebuilt nightly"]
    assert backup.stat().st_mode & 0o777 == 0o600


# -- read-only stores --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("read_only", ["file", "directory"])
def test_a_read_only_store_can_be_read(
    open_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    read_only: str,
) -> None:
    cli = in_process(capsys, monkeypatch)
    made = cli("remember", "deploys go through the blue green switch", "--json")
    assert made.code == 0, made.err
    memory_id = made.json()["memory"]["id"]
    cli("remember", "the cache is warmed after each deploy")
    # Import every module the commands use while they are readable (root's pyenv is not).
    for warm in (["list"], ["recall", "deploy"], ["show", memory_id], ["stats"], ["status"]):
        assert cli(*warm).code == 0
    exports = open_home.parent / "exports"
    exports.mkdir()
    _give_to_nobody([exports, open_home, *open_home.rglob("*")])
    store = open_home / "store.db"
    for part in (store, Path(f"{store}-wal"), Path(f"{store}-shm")):
        if part.exists():
            part.chmod(0o444)
    if read_only == "directory":
        open_home.chmod(0o500)
    before = _digest(store)

    listed, recalled, shown, exported, stats = _unprivileged(
        [
            ("list", "--json"),
            ("recall", "blue green", "--json"),
            ("show", memory_id, "--json"),
            ("export", "-o", str(exports / "out.json"), "--json"),
            ("stats", "--json"),
        ]
    )

    for run in (listed, recalled, shown, exported, stats):
        assert run.code == 0, run.err
    assert {m["content"] for m in listed.json()["memories"]} == {
        "deploys go through the blue green switch",
        "the cache is warmed after each deploy",
    }
    assert recalled.json()["hits"][0]["id"] == memory_id
    assert shown.json()["content"] == "deploys go through the blue green switch"
    assert exported.json()["memories"] == 2
    assert len(json.loads((exports / "out.json").read_text())["memories"]) == 2
    assert stats.json()["memories"] == 2
    assert _digest(store) == before


# -- empty and damaged stores -------------------------------------------------------


def test_a_zero_byte_store_is_refused_not_replaced(cli: Callable[..., Run], home: Path) -> None:
    home.mkdir(mode=0o700)
    store = home / "store.db"
    store.write_bytes(b"")

    for args in (["list"], ["remember", "a new memory"], ["recall", "memory"], ["stats"]):
        run = cli(*args)
        assert run.code == 1, args
        assert "0 bytes" in run.err, run.err
        assert "sealmem recover" in run.err, run.err
    doctor = cli("doctor", "--json")

    assert doctor.code == 1
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    assert not checks["open"]["ok"]
    assert "sealmem recover" in checks["open"]["detail"]
    assert store.read_bytes() == b""


def _damaged_store(cli: Callable[..., Run], home: Path, count: int) -> tuple[Path, set[str]]:
    """A store of ``count`` memories with two of its table pages overwritten with garbage;
    returns the store and the markers of the memories those pages held."""
    for i in range(count):
        text = f"memo-{i:04d} " + " ".join(f"word{(i * 7 + j) % 97}" for j in range(90))
        assert cli("remember", text).code == 0
    store = home / "store.db"
    assert not Path(f"{store}-wal").exists() or Path(f"{store}-wal").stat().st_size == 0
    data = bytearray(store.read_bytes())
    pages = sorted({data.find(f"memo-{i:04d} ".encode()) // PAGE for i in (count // 3, count // 2)})
    assert 0 not in pages
    lost = set()
    for page in pages:
        chunk = bytes(data[page * PAGE : (page + 1) * PAGE])
        lost |= {f"memo-{i:04d}" for i in range(count) if f"memo-{i:04d} ".encode() in chunk}
        data[page * PAGE : (page + 1) * PAGE] = random.Random(page).randbytes(PAGE)
    store.write_bytes(bytes(data))
    return store, lost


@pytest.mark.slow
def test_doctor_reports_a_damaged_store_and_recover_salvages_the_readable_memories(
    cli: Callable[..., Run], home: Path, tmp_path: Path
) -> None:
    store, lost = _damaged_store(cli, home, 120)
    assert 0 < len(lost) < 30
    damaged_bytes = store.read_bytes()

    doctor = cli("doctor", "--json")
    assert doctor.code == 1
    failed = {c["name"]: c["detail"] for c in doctor.json()["checks"] if not c["ok"]}
    assert "integrity" in failed
    assert "sealmem recover" in failed["integrity"]

    out = tmp_path / "export.json"
    export = cli("export", "-o", str(out))
    assert export.code == 1
    assert "could not read" in export.err
    assert "nothing was written" in export.err
    assert not out.exists()

    recovered = cli("recover", "--json")

    assert recovered.code == 0, recovered.err
    report = recovered.json()
    assert report["recovered"]["memories"] == 120 - len(lost)
    assert report["lost"]["memories"] == len(lost)
    kept = Path(report["damaged_copy"])
    assert kept.parent == home
    assert kept.name.startswith("store.db.damaged-")
    assert kept.read_bytes() == damaged_bytes
    listed = cli("list", "--all-projects", "-n", "1000", "--json").json()["memories"]
    markers = {m["content"].split()[0] for m in listed}
    assert markers == {f"memo-{i:04d}" for i in range(120)} - lost
    survivor = sorted(markers)[0]
    hits = cli("recall", survivor, "--json").json()["hits"]
    assert hits[0]["content"].startswith(survivor + " ")
    assert cli("doctor").code == 0
    assert cli("remember", "written after the recovery").code == 0


@pytest.mark.slow
def test_recover_to_a_new_path_leaves_the_damaged_store_in_place(
    cli: Callable[..., Run], home: Path, tmp_path: Path
) -> None:
    store, lost = _damaged_store(cli, home, 60)
    damaged_bytes = store.read_bytes()
    target = tmp_path / "salvaged.db"

    run = cli("recover", "--output", str(target))

    assert run.code == 0, run.err
    assert f"recovered {60 - len(lost)} memories" in run.out
    assert store.read_bytes() == damaged_bytes
    again = cli("recover", "--output", str(target))
    assert again.code == 1
    assert "already exists" in again.err


def test_recover_refuses_a_file_sqlite_cannot_read_and_changes_nothing(
    cli: Callable[..., Run], home: Path
) -> None:
    home.mkdir(mode=0o700)
    store = home / "store.db"
    store.write_bytes(b"not a database at all " * 300)

    run = cli("recover")

    assert run.code == 1
    assert "nothing was changed" in run.err
    assert "sealmem import" in run.err
    assert store.read_bytes() == b"not a database at all " * 300
    assert sorted(p.name for p in home.iterdir()) == ["store.db"]
