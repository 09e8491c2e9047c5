"""Transcript reading, capture, ``sealmem scan`` and ``sealmem watch`` on real files."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.hosts import capture, follow
from sealmem.client.hosts.transcripts import find_transcripts, read_turns
from sealmem.client.recall.api import MemoryStore
from tests.hosts.conftest import FIXTURES, Env, Run

CLI = Callable[..., Run]


def _transcript(env: Env, name: str = "3f1c2a9e.jsonl") -> Path:
    folder = env.home / ".claude" / "projects" / "-home-dev-webshop"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    shutil.copyfile(FIXTURES / "transcript.jsonl", path)
    return path


def _assistant(env: Env, text: str) -> str:
    message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return json.dumps({"type": "assistant", "cwd": str(env.project), "message": message}) + "\n"


def test_read_turns_skips_meta_sidechains_and_half_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    body = (FIXTURES / "transcript.jsonl").read_bytes()
    path.write_bytes(body + b'{"type": "assistant", "message": {"role": "assis')
    turns, offset = read_turns(path)
    assert offset == len(body)  # the half-written line is left for next time
    texts = [t.text for t in turns]
    assert not any(t.startswith(("<command-", "Caveat:")) for t in texts)
    assert not any("sidechain" in t for t in texts)
    assert [t.is_error for t in turns if t.role == "tool_result"] == [True, False]
    assert turns[0].cwd == "/home/dev/webshop"
    again, same = read_turns(path, offset)
    assert (again, same) == ([], offset)


def test_read_turns_skips_a_line_nested_too_deeply(tmp_path: Path) -> None:
    """A transcript line of a hundred thousand nested arrays (a tool input is the
    model's JSON, of any depth) made ``json.loads`` raise RecursionError, not
    ValueError: every later read of that transcript failed, and nothing after the line
    was ever captured.  It is skipped like any line that does not parse."""
    path = tmp_path / "t.jsonl"
    deep = b"[" * 100_000 + b"]" * 100_000
    body = (FIXTURES / "transcript.jsonl").read_bytes()
    path.write_bytes(deep + b"\n" + body)
    turns, offset = read_turns(path)
    assert offset == len(deep) + 1 + len(body)
    assert [t.text for t in turns] == [t.text for t in read_turns(FIXTURES / "transcript.jsonl")[0]]


def test_propose_keeps_lessons_and_drops_narration() -> None:
    turns, _ = read_turns(FIXTURES / "transcript.jsonl")
    proposed, duplicates = capture.propose(turns)
    texts = [c.text for c in proposed]
    assert duplicates == 0
    assert texts == [
        "The root cause was that the checkout fixtures reused one SQLite file across xdist "
        "workers, so parallel tests locked each other out.",
        "Never share one SQLite file between pytest-xdist workers; use `tmp_path` per test.",
        "The CI runners have no Docker, so integration tests must use the in-memory fake of "
        "the payment gateway.",
        "We pin the payment SDK to 4.2.x because 4.3 changed the refund API without a major "
        "version bump.",
    ]
    assert proposed[0].after_error  # it follows the failed test run
    assert [c.kind for c in proposed] == ["lesson", "lesson", "note", "decision"]
    # Saying the same thing twice in a session proposes it once.
    twice, dups = capture.propose([*turns, *turns])
    assert len(twice) == len(proposed)
    assert dups == len(proposed)


@pytest.mark.slow
def test_scan_proposes_then_stores_once(cli: CLI, env: Env, store: MemoryStore) -> None:
    path = _transcript(env)
    store.remember(
        "We pin the payment SDK to 4.2.x: 4.3 changed the refund API without a major bump.",
        kind="decision",
        project="webshop",
    )
    listed = cli("scan", "--json", "--project", "webshop")
    assert listed.code == 0, listed.err
    (doc,) = listed.json()["transcripts"]
    assert doc["path"] == str(path)
    assert doc["duplicates"] == 1  # the SDK decision is already stored
    assert len(doc["proposed"]) == 3
    assert doc["stored_ids"] == []
    assert len(store.recent(project="webshop")) == 1

    stored = cli("scan", str(path), "--store", "--project", "webshop")
    assert stored.code == 0, stored.err
    assert "3 memories stored privately" in stored.out
    assert "sealmem captured" in stored.out
    kept = store.recent(project="webshop")
    assert len(kept) == 4
    assert sorted(m.record.visibility for m in kept) == ["private", "private", "private", "team"]
    again = cli("scan", str(path), "--store", "--project", "webshop", "--json").json()
    assert again["transcripts"][0]["proposed"] == []
    assert len(store.recent(project="webshop")) == 4


def test_scan_takes_the_project_from_the_transcript(cli: CLI, env: Env) -> None:
    _transcript(env)
    run = cli("scan")
    assert run.code == 0, run.err
    assert "(project webshop)" in run.out  # /home/dev/webshop, from the transcript's cwd
    assert "4 memories proposed" in run.out


def test_follower_reads_only_new_turns(env: Env, store: MemoryStore) -> None:
    root = env.home / ".claude" / "projects"
    old = _transcript(env)
    seen: list[str] = []
    follower = follow.Follower(env.state, save=True, report=lambda _p, t: seen.extend(t))
    follower.prime(root)
    assert capture.was_read(env.state, old)
    assert follower.process(store, old) is None  # nothing new in the old transcript
    with open(old, "a", encoding="utf-8") as handle:
        handle.write(_assistant(env, "Warning: never run the load tests against production."))
    result = follower.process(store, old)
    assert result is not None
    assert [(m.record.content, m.record.visibility) for m in result.stored] == [
        ("Never run the load tests against production.", "private")
    ]
    assert seen == ["Never run the load tests against production."]
    assert find_transcripts(root) == [old]


@pytest.mark.slow
def test_watch_captures_a_new_transcript(env: Env, store: MemoryStore) -> None:
    root = env.home / ".claude" / "projects"
    root.mkdir(parents=True)
    stop, ready = threading.Event(), threading.Event()
    seen: list[str] = []
    worker = threading.Thread(
        target=follow.watch,
        args=(root,),
        kwargs={
            "save": True,
            "report": lambda _p, t: seen.extend(t),
            "stop": stop,
            "ready": ready,
        },
        daemon=True,
    )
    worker.start()
    try:
        assert ready.wait(10)
        path = _transcript(env, "new-session.jsonl")
        deadline = time.monotonic() + 10
        while len(seen) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        worker.join(5)
    assert not worker.is_alive()
    assert len(seen) == 4
    watched = store.recent(project="webshop")
    assert [m.record.visibility for m in watched] == ["private"] * 4
    assert capture.was_read(env.state, path)
