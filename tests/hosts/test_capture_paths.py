"""``sealmem scan`` and ``sealmem watch`` given a path that cannot work: one line that
names the path and the fix, exit 1, no traceback, nothing stored, nothing created."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest

from sealmem.client.recall.api import MemoryStore
from tests.hosts.conftest import FIXTURES, Env, Run

CLI = Callable[..., Run]


def one_line_error(done: Run) -> str:
    assert done.code == 1, done
    assert "Traceback" not in done.err, done.err
    lines = [line for line in done.err.splitlines() if line.strip()]
    assert len(lines) == 1, done.err
    assert lines[0].startswith("error: "), done.err
    return lines[0]


def test_scan_of_a_missing_transcript_names_it(cli: CLI, env: Env, store: MemoryStore) -> None:
    good = env.home / "good.jsonl"
    shutil.copyfile(FIXTURES / "transcript.jsonl", good)
    missing = env.home / "no-such-session.jsonl"
    line = one_line_error(cli("scan", str(good), str(missing), "--store", "--project", "webshop"))
    assert str(missing) in line
    assert "does not exist" in line
    assert "give no path" in line
    assert store.recent(project="webshop") == []  # refused before anything was stored


def test_scan_of_a_directory_says_which_files_to_give(cli: CLI, env: Env) -> None:
    folder = env.home / ".claude" / "projects" / "-home-dev-webshop"
    folder.mkdir(parents=True)
    line = one_line_error(cli("scan", str(folder)))
    assert f"{folder} is a directory" in line
    assert f"sealmem scan {folder}/*.jsonl" in line


@pytest.mark.slow
def test_watch_of_a_missing_root_fails_at_once(script: Callable[..., Run], env: Env) -> None:
    """A real process: it used to create the directory and follow it forever."""
    missing = env.home / "not-there" / "projects"
    line = one_line_error(script("watch", "--root", str(missing), timeout=30))
    assert f"--root {missing} does not exist" in line
    assert "give the directory the host writes transcripts to" in line
    assert not missing.parent.exists()


@pytest.mark.slow
def test_watch_of_a_file_as_root_fails_at_once(script: Callable[..., Run], env: Env) -> None:
    plain = env.home / "notes.txt"
    plain.write_text("not a directory\n", encoding="utf-8")
    line = one_line_error(script("watch", "--root", str(plain), timeout=30))
    assert f"--root {plain} is not a directory" in line
