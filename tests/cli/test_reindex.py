"""A drifted search index is found by 'doctor' and mended by 'reindex', losing nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store.derived import REBUILD_STEPS

CLI = [sys.executable, "-m", "sealmem.client.cli"]


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEALMEM_HOME": str(home)}
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_doctor_finds_a_drifted_index_and_reindex_mends_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with MemoryStore.open(home / "store.db") as store:
        kept = store.remember("blue-green deploys need a drained queue", project="p").memory
        store.remember("old note", project="p")
        conn = store.connection
        row = conn.execute(
            "SELECT rowid, content, keywords FROM memories WHERE id = ?", (kept.id,)
        ).fetchone()
        # drop the memory from the index behind the table's back
        conn.execute(
            "INSERT INTO memories_fts (memories_fts, rowid, content, keywords) "
            "VALUES ('delete', ?, ?, ?)",
            tuple(row),
        )
        conn.commit()
        assert store.recall("drained queue", project="p") == []

    broken = run(home, "doctor")
    assert broken.returncode == 1
    assert "sealmem reindex" in broken.stdout
    assert "Traceback" not in broken.stderr

    mended = run(home, "reindex", "--json")
    assert mended.returncode == 0, mended.stderr
    assert json.loads(mended.stdout) == {"reindexed": {"memories": 2, "history": 0}}
    assert run(home, "doctor").returncode == 0
    hits = json.loads(run(home, "recall", "drained queue", "-p", "p", "--json").stdout)["hits"]
    assert hits[0]["id"] == kept.id  # "old note", written just after, may follow as context


# -- progress: the project's own (rich, on a terminal only), not click's bar --------------


@pytest.mark.slow
def test_reindex_outside_a_terminal_prints_only_the_summary(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with MemoryStore.open(home / "store.db") as store:
        store.remember("a note to index", project="p")
    done = run(home, "reindex")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no bare "reindexing" label on a log or a pipe
    assert done.stdout.startswith("rebuilt the search indexes over 1 ")


@pytest.mark.slow
def test_reindex_on_a_terminal_shows_the_progress_import_shows(tmp_path: Path) -> None:
    from tests.cli.test_list_view import _run_with_stderr_on_a_tty

    home = tmp_path / "home"
    with MemoryStore.open(home / "store.db") as store:
        store.remember("a note to index", project="p")
    code, out, err = _run_with_stderr_on_a_tty([*CLI, "reindex"], home)
    assert code == 0, err
    assert "reindexing" in err
    steps = len(REBUILD_STEPS)
    assert f"{steps}/{steps} steps" in err  # how far, in the same columns as import's bar
    assert "[####" not in err  # click's bar is gone
    assert out.startswith("rebuilt the search indexes over 1 ")
