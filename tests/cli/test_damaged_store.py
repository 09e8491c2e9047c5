"""A store that lost committed memories to a damaged WAL says so, refuses writes, and
comes back with ``sealmem recover``: the issue saw 54 of 60 vanish while doctor said
"all good" and remember went on writing."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.paths import local_author
from sealmem.client.store import journal
from tests.support.cli import Run
from tests.support.wal import flip_wal_frame, write_unchecked

COMMITTED = 60


def one_line(done: Run) -> str:
    assert done.code == 1, done
    assert "Traceback" not in done.err, done.err
    lines = [line for line in done.err.splitlines() if line.strip()]
    assert len(lines) == 1, done.err
    return lines[0]


def count(cli: Callable[..., Run]) -> int:
    stats = cli("stats", "--json")
    assert stats.code == 0, stats
    return int(stats.json()["memories"])


def damaged_store(cli: Callable[..., Run], home: Path) -> int:
    """60 memories committed into the WAL, a frame of it flipped; how many remain."""
    assert cli("init").code == 0
    write_unchecked(home / "store.db", local_author(home), COMMITTED)
    flip_wal_frame(home / "store.db")
    left = count(cli)
    assert left < COMMITTED  # the damage is real: SQLite dropped committed frames
    return left


@pytest.mark.slow
def test_lost_memories_are_named_and_writes_refused(cli: Callable[..., Run], home: Path) -> None:
    left = damaged_store(cli, home)
    doctor = cli("doctor", "--json")  # the doctor said "all good" here
    assert doctor.code == 1
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    assert not checks["journal"]["ok"]
    assert f"{COMMITTED - left} memories missing" in checks["journal"]["detail"]

    line = one_line(cli("remember", "a new lesson"))
    assert f"{COMMITTED - left} memories missing since" in line
    assert "sealmem recover" in line
    assert "reading still works" in line

    # Reads keep working; every write is refused, import included.
    export = home.parent / "export.json"
    assert cli("export", "-o", str(export)).code == 0
    assert "sealmem recover" in one_line(cli("import", str(export)))
    assert "sealmem recover" in one_line(cli("forget", "00000000", "--reason", "x"))
    assert count(cli) == left


@pytest.mark.slow
def test_recover_clears_the_mark(cli: Callable[..., Run], home: Path) -> None:
    left = damaged_store(cli, home)
    assert cli("recover").code == 0
    assert cli("remember", "written after recover").code == 0
    doctor = cli("doctor", "--json")
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    assert checks["journal"]["ok"], checks["journal"]
    _tally, damage = journal.read(home / "store.db")
    assert damage is None
    assert count(cli) == left + 1


def test_an_older_copy_put_back_is_caught(cli: Callable[..., Run], home: Path) -> None:
    """The same store, older: its write count went back, so writes were lost."""
    assert cli("remember", "first").code == 0
    store = home / "store.db"
    backup = store.read_bytes()  # no WAL now: each command checkpoints as it closes
    assert cli("remember", "second").code == 0
    assert cli("remember", "third").code == 0
    store.write_bytes(backup)
    assert "2 memories missing" in one_line(cli("remember", "fourth"))


@pytest.mark.slow
def test_a_sound_store_passes(cli: Callable[..., Run], home: Path) -> None:
    for i in range(5):
        assert cli("remember", f"lesson {i}").code == 0
    doctor = cli("doctor", "--json")
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    assert checks["journal"]["ok"]
    assert "5 memories" in checks["journal"]["detail"], checks["journal"]


@pytest.mark.slow
def test_a_store_sqlite_calls_corrupt_is_marked_by_doctor(
    cli: Callable[..., Run], home: Path
) -> None:
    for i in range(30):
        assert cli("remember", f"lesson {i}: " + "the build cache moved " * 20).code == 0
    store = home / "store.db"
    with contextlib.closing(sqlite3.connect(store)) as conn:
        page = int(conn.execute("PRAGMA page_size").fetchone()[0])
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'memories_kind'"
        ).fetchone()
    data = bytearray(store.read_bytes())
    end = int(root) * page  # the index's one page: its cells sit at the end of it
    for offset in range(end - 400, end - 8, 37):
        data[offset] ^= 0x5A
    store.write_bytes(bytes(data))
    doctor = cli("doctor", "--json")
    assert doctor.code == 1
    checks = {c["name"]: c for c in doctor.json()["checks"]}
    assert not checks["integrity"]["ok"]
    _tally, damage = journal.read(store)
    assert damage is not None  # marked: every write is refused from now on
    assert "integrity check failed" in damage.why
    line = one_line(cli("remember", "one more"))
    assert "sealmem recover" in line
