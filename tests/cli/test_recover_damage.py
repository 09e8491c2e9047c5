"""``sealmem recover`` on the damage it exists for: 8 KiB overwritten in the middle of a
store file.  It used to stop at the first table whose first read raised ("not a usable
SQLite database ... run 'sealmem recover'") while plain sqlite3 read every memory."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.store.recover import recover
from sealmem.protocol.errors import StoreError
from tests.support.cli import Run

MEMORIES = 30
WINDOW = 8192
NOW = 1_800_000_000_000


def thirty(cli: Callable[..., Run], home: Path) -> Path:
    for i in range(MEMORIES):
        done = cli("remember", f"lesson {i}: the build cache moved to the shared disk " * 6)
        assert done.code == 0, done
    store = home / "store.db"
    with contextlib.closing(sqlite3.connect(store)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return store


def overwrite(store: Path, offset: int) -> None:
    with store.open("r+b") as f:
        f.seek(offset)
        f.write(b"\xaa" * WINDOW)


def readable_ids(store: Path) -> set[str]:
    """The memories plain sqlite3 reads, one rowid at a time."""
    found: set[str] = set()
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        for rowid in range(1, MEMORIES + 1):
            with contextlib.suppress(sqlite3.DatabaseError):
                row = conn.execute("SELECT id FROM memories WHERE rowid = ?", (rowid,)).fetchone()
                if row is not None:
                    found.add(str(row[0]))
    return found


def schema_readable(store: Path) -> bool:
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError:
            return False
        return True


def test_recover_brings_back_every_memory_past_a_wiped_table(
    cli: Callable[..., Run], home: Path
) -> None:
    store = thirty(cli, home)
    with contextlib.closing(sqlite3.connect(store)) as conn:
        page = int(conn.execute("PRAGMA page_size").fetchone()[0])
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'history'"
        ).fetchone()
    pages = store.stat().st_size // page
    assert 3 < int(root) < pages - 3  # mid-file
    overwrite(store, (int(root) - 1) * page)  # the history table's root and the page after
    assert len(readable_ids(store)) == MEMORIES

    doctor = cli("doctor")
    assert doctor.code == 1
    assert "sealmem recover" in doctor.out
    done = cli("recover")
    assert done.code == 0, done
    assert "Traceback" not in done.err
    first = done.out.splitlines()[0]
    assert first.startswith(f"recovered {MEMORIES} memories into "), first
    assert "; 0 unreadable" in first
    assert "tables lost whole: history" in first
    assert cli("stats", "--json").json()["memories"] == MEMORIES
    assert cli("doctor").code == 0


@pytest.mark.slow
def test_recover_reads_every_row_sqlite_can_wherever_the_damage_falls(
    cli: Callable[..., Run], home: Path, tmp_path: Path
) -> None:
    pristine = thirty(cli, home)
    size = pristine.stat().st_size
    refused = 0
    for offset in range(WINDOW, size - WINDOW + 1, WINDOW):
        case = tmp_path / f"at-{offset}"
        case.mkdir()
        store = case / "store.db"
        shutil.copy(pristine, store)
        overwrite(store, offset)
        readable = readable_ids(store)
        if not schema_readable(store):  # refused only when sqlite3 cannot read the schema
            assert not readable, offset
            with pytest.raises(StoreError, match="cannot read the header or schema"):
                recover(store, output=case / "salvaged.db", now_ms=NOW)
            refused += 1
            continue
        result = recover(store, output=case / "salvaged.db", now_ms=NOW)
        with contextlib.closing(sqlite3.connect(case / "salvaged.db")) as conn:
            kept = {str(r[0]) for r in conn.execute("SELECT id FROM memories")}
        assert kept >= readable, (offset, len(kept), len(readable))
        assert result.recovered.get("memories", 0) == len(kept)
        if len(readable) < MEMORIES and "memories" not in result.unreadable_tables:
            assert result.lost["memories"] + len(kept) <= MEMORIES
    assert refused < size // WINDOW // 3  # most windows leave the schema readable


@pytest.mark.parametrize("offset", [0, 4096])
def test_recover_refusing_a_lost_header_does_not_send_you_back_to_recover(
    cli: Callable[..., Run], home: Path, offset: int
) -> None:
    """The refusal quoted the opener's whole sentence, whose fix is "run 'sealmem
    recover'": recover told the user to run recover."""
    store = thirty(cli, home)
    overwrite(store, offset)
    refused = cli("recover")
    assert refused.code == 1
    assert "cannot read the header or schema" in refused.err
    assert "run 'sealmem recover'" not in refused.err, refused.err
    assert "sqlite3" in refused.err  # the way out that is left
