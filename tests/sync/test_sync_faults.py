"""A sync that meets a full disk or damaged text in the store: one line with the fix, no
traceback, nothing lost; the next sync, once the cause is gone, carries on."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sealmem.client.paths import local_author
from sealmem.client.sync.engine import sync
from sealmem.protocol.errors import StoreError
from tests.support.cli import Run, in_process

from .conftest import PROJECT, World, make_world


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    return in_process(capsys, monkeypatch)


def one_line_error(done: Run) -> str:
    assert done.code == 1, done
    assert "Traceback" not in done.err, done.err
    lines = [line for line in done.err.splitlines() if line.strip()]
    assert len(lines) == 1, done.err
    assert lines[0].startswith("error: "), done.err
    return lines[0]


@contextlib.contextmanager
def small_disk(where: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted at ``where`` (skips when mounting is not allowed)."""
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk``; remove the returned file to free it again."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    assert os.statvfs(disk).f_bavail == 0
    return filler


@pytest.mark.slow
def test_sync_on_a_full_disk_says_so_in_one_line_and_loses_nothing(
    tmp_path: Path, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    with small_disk(tmp_path / "disk", "16M") as disk:
        world = make_world(disk, "alice")
        try:
            admin, alice = world.nodes["admin"], world.nodes["alice"]
            alice.sync()
            for n in range(40):
                admin.remember(f"deploy note {n}: " + "the staging database moved " * 40)
            admin.sync()
            before = alice.winners()
            local_author(alice.home)  # written now: the store itself meets the full disk
            filler = fill(disk)

            monkeypatch.setenv("SEALMEM_HOME", str(alice.home))
            line = one_line_error(cli("sync"))
            assert "full" in line, line
            assert str(alice.home / "store.db") in line, line  # the store met it, by name
            assert "free some space" in line, line
            assert "nothing was lost" in line, line
            assert alice.winners() == before  # the failed pull merged nothing half-way

            filler.unlink()
            done = cli("sync")
            assert done.code == 0, done
            assert len(alice.winners()) == len(before) + 40
        finally:
            world.close()


@pytest.mark.slow
def test_sync_translates_sqlite_full_into_a_store_error(world: World) -> None:
    """The same ``SQLITE_FULL`` without a mount: the store may not grow past its size."""
    admin, alice = world.nodes["admin"], world.nodes["alice"]
    for n in range(30):
        admin.remember(f"cache note {n}: " + "sessions live in redis " * 30)
    admin.sync()
    before = alice.winners()
    pages = alice.store.connection.execute("PRAGMA page_count").fetchone()[0]
    alice.store.connection.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreError, match="is full") as caught:
        sync(alice.t, clock=alice.clock)
    assert isinstance(caught.value.__cause__, sqlite3.Error)
    assert "free some space" in str(caught.value)
    assert alice.winners() == before
    alice.store.connection.execute("PRAGMA max_page_count = 1073741823")
    alice.sync()
    assert len(alice.winners()) == len(before) + 30


def plant_bad_text(conn: sqlite3.Connection, memory_id: str) -> None:
    """Bytes that are not UTF-8 in a row's content, as another tool could write them."""
    conn.execute(
        "UPDATE memories SET content = CAST(x'6361636865ff20726564697320fe' AS TEXT) WHERE id = ?",
        (memory_id,),
    )


@pytest.mark.slow
def test_bad_text_in_the_store_stops_no_command_and_doctor_names_the_row(
    world: World, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    bad = alice.remember("cache redis sessions for one hour")
    good = alice.remember("the deploy runs on fridays only")
    plant_bad_text(alice.store.connection, bad.id)

    monkeypatch.setenv("SEALMEM_HOME", str(alice.home))
    done = cli("sync")
    assert done.code == 0, done
    assert "Traceback" not in done.err

    for args in (
        ("recall", "redis", "-p", PROJECT),
        ("list", "-p", PROJECT),
        ("show", bad.id),
        ("export",),
    ):
        shown = cli(*args)
        assert shown.code == 0, (args, shown)
        assert "Traceback" not in shown.err
    assert "\ufffd" in cli("show", bad.id).out

    doctor = cli("doctor", "--json")
    assert doctor.code == 1, doctor
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    assert not checks["text"]["ok"]
    assert bad.id in checks["text"]["detail"]
    assert "memories.content" in checks["text"]["detail"]
    assert good.id not in checks["text"]["detail"]
    assert "sealmem forget" in checks["text"]["detail"]

    # the stored bytes are kept as they were (nothing rewritten behind the user's back)
    raw = alice.store.connection.execute(
        "SELECT CAST(content AS BLOB) FROM memories WHERE id = ?", (bad.id,)
    ).fetchone()[0]
    assert raw == bytes.fromhex("6361636865ff20726564697320fe")

    # teammates still get the rest, and the damaged one as readable text
    bob.sync()
    got = bob.memories()
    assert got[good.id].record.content == "the deploy runs on fridays only"
    assert got[bad.id].record.content == "cache\ufffd redis \ufffd"


def test_an_os_error_reaching_the_cli_is_one_line_unless_debugging(
    tmp_path: Path, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last line of defence: a bare ``OSError`` no layer translated (here the first
    write of ``identity.json`` on a full disk) is one sentence; ``SEALMEM_DEBUG=1``
    shows the traceback instead."""
    with small_disk(tmp_path / "disk", "2M") as disk:
        home = disk / "home"
        monkeypatch.setenv("SEALMEM_HOME", str(home))
        filler = fill(disk)
        line = one_line_error(cli("remember", "the first memory of this machine"))
        assert "the disk is full" in line, line
        assert str(home) in line, line
        assert "free some space" in line, line

        monkeypatch.setenv("SEALMEM_DEBUG", "1")
        with pytest.raises(OSError, match="No space left") as caught:
            cli("remember", "the first memory of this machine")
        assert caught.value.errno == errno.ENOSPC

        monkeypatch.delenv("SEALMEM_DEBUG")
        filler.unlink()
        assert cli("remember", "the first memory of this machine").code == 0
