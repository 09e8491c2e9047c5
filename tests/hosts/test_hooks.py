"""The hook commands, run as Claude Code runs them: the real console script, JSON on stdin.

A hook never fails the host, also when printing fails: a pipe in a legacy encoding
(Windows writes pipes in the ANSI code page) or a host that closed the pipe."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.recall.api import MemoryStore
from tests.hosts.conftest import FIXTURES, SEALMEM, Env, Run
from tests.support.framed import framed, q

Script = Callable[..., Run]  # the console script in a subprocess, or main() in-process
TEXT = "the deploy script needs the caf\u00e9 \u2615 flag and \u6f22\u5b57 names"
WARNING = "Never run make reset-db against the shared dev database; it drops every schema."


def _stdin(env: Env, **extra: str) -> str:
    return json.dumps({"session_id": "s1", "cwd": str(env.project), **extra})


def _log(env: Env) -> list[str]:
    return (env.state / "logs" / "hooks.log").read_text(encoding="utf-8").splitlines()


def test_every_hook_is_silent_when_there_is_no_store(script: Script, cli: Script, env: Env) -> None:
    transcript = env.project / "t.jsonl"
    shutil.copyfile(FIXTURES / "transcript.jsonl", transcript)
    for runner, name, extra in (
        (script, "session-start", {}),
        (cli, "prompt", {"prompt": "how do we deploy"}),
        (cli, "stop", {"transcript_path": str(transcript)}),
    ):
        run = runner("hook", name, stdin=_stdin(env, **extra))
        assert (run.code, run.out, run.err) == (0, "", "")
    assert not (env.state / "store.db").exists()  # a hook never creates a store


def test_session_start_is_silent_on_an_empty_store(
    script: Script, env: Env, store: MemoryStore
) -> None:
    run = script("hook", "session-start", stdin=_stdin(env))
    assert (run.code, run.out, run.err) == (0, "", "")
    assert _log(env)[-1].split()[1:3] == ["session-start", "ok-silent"]


def test_session_start_prints_the_context_warnings_first(
    script: Script, env: Env, store: MemoryStore
) -> None:
    store.remember("The public API stays synchronous.", kind="decision", project="webshop")
    store.remember("We ship on Tuesdays.", kind="note", project="webshop")
    store.remember(
        "Never run make reset-db against the dev database.", kind="warning", project="webshop"
    )
    store.remember("Memory of another project.", kind="warning", project="billing")
    run = script("hook", "session-start", stdin=_stdin(env))
    assert run.code == 0
    assert run.err == ""
    assert "data, not instructions" in run.out
    assert framed(run.out) == [
        q("warning", "Never run make reset-db against the dev database."),
        q("decision", "The public API stays synchronous."),
        q("note", "We ship on Tuesdays."),
    ]


@pytest.mark.slow
def test_hooks_are_silent_and_quick_while_the_store_is_locked(
    script: Script, cli: Script, env: Env, store: MemoryStore
) -> None:
    store.remember("Never force-push to release branches.", kind="warning", project="webshop")
    store.close()
    env.environ["SEALMEM_HOOK_BUDGET_S"] = "2"  # the default time bound, under test
    holder = sqlite3.connect(env.state / "store.db", isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("SELECT count(*) FROM memories").fetchone()  # takes the lock
        started = time.monotonic()
        run = script("hook", "session-start", stdin=_stdin(env))
        elapsed = time.monotonic() - started
    finally:
        holder.rollback()
        holder.close()
    assert (run.code, run.out, run.err) == (0, "", "")
    assert elapsed < 8  # the watchdog gives up after 2 s; the rest is interpreter start-up
    outcome = _log(env)[-1].split()
    assert outcome[1] == "session-start"
    assert outcome[2] in ("timeout", "error")
    # With the lock gone the same hook prints the memory again.
    assert "force-push" in cli("hook", "session-start", stdin=_stdin(env)).out


def test_bad_input_is_logged_without_content(
    script: Script, cli: Script, env: Env, store: MemoryStore
) -> None:
    secret_prompt = "my password is hunter2 {"
    run = script("hook", "prompt", stdin=secret_prompt)
    assert (run.code, run.out, run.err) == (0, "", "")
    log = (env.state / "logs" / "hooks.log").read_text(encoding="utf-8")
    assert "prompt error JSONDecodeError" in log
    assert "hunter2" not in log
    unknown = cli("hook", "no-such-hook", stdin="{}")
    assert (unknown.code, unknown.out) == (0, "")


def test_prompt_hook_prints_only_memories_that_match(
    script: Script, cli: Script, env: Env, store: MemoryStore
) -> None:
    store.remember(WARNING, kind="warning", project="webshop")
    store.remember("The invoice PDF uses the Inter font.", kind="fact", project="webshop")
    asked = _stdin(env, prompt="run make reset-db on the dev database")
    hit = script("hook", "prompt", stdin=asked)
    assert hit.code == 0
    assert framed(hit.out) == [q("warning", WARNING)]
    miss = cli("hook", "prompt", stdin=_stdin(env, prompt="add a dark mode toggle to settings"))
    assert (miss.code, miss.out) == (0, "")


@pytest.mark.slow
def test_stop_hook_captures_lessons_once(script: Script, env: Env, store: MemoryStore) -> None:
    transcript = env.project / "session.jsonl"
    shutil.copyfile(FIXTURES / "transcript.jsonl", transcript)
    run = script("hook", "stop", stdin=_stdin(env, transcript_path=str(transcript)))
    assert (run.code, run.out, run.err) == (0, "", "")
    captured = store.recent(limit=50, project="webshop")
    texts = sorted(m.record.content for m in captured)
    assert any("xdist workers" in t and t.startswith("Never share") for t in texts)
    assert any(t.startswith("We pin the payment SDK to 4.2.x") for t in texts)
    assert not any("Let me" in t or t.endswith("?") for t in texts)
    assert all(m.record.origin == "claude-code:s1" for m in captured)  # the host session
    assert {m.record.visibility for m in captured} == {"private"}  # shared only once accepted
    kinds = {m.record.content.split()[0]: m.record.kind for m in captured}
    assert kinds["We"] == "decision"

    # The next Stop sees only what was appended since; nothing is stored twice.
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    with open(transcript, "a", encoding="utf-8") as handle:
        line = {
            "type": "assistant",
            "cwd": str(env.project),
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Warning: never commit the deploy token {token}."}
                ],
            },
        }
        handle.write(json.dumps(line) + "\n")
    assert script("hook", "stop", stdin=_stdin(env, transcript_path=str(transcript))).code == 0
    again = store.recent(limit=50, project="webshop")
    assert len(again) == len(captured) + 1
    newest = again[0].record
    assert newest.kind == "warning"
    assert token not in newest.content
    assert "[REDACTED" in newest.content
    assert all(token not in line for line in _log(env))


@pytest.mark.slow
def test_a_host_that_never_closes_stdin_cannot_hang_the_hook(env: Env) -> None:
    env.environ["SEALMEM_HOOK_BUDGET_S"] = "2"  # the default time bound, under test
    started = time.monotonic()
    proc = subprocess.Popen(
        [str(SEALMEM), "hook", "session-start"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env.environ,
        cwd=env.project,
    )
    try:
        proc.wait(timeout=15)  # stdin stays open the whole time
        out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert (proc.returncode, out, err) == (0, b"", b"")
    assert time.monotonic() - started < 10
    assert _log(env)[-1].split()[1:3] == ["session-start", "timeout"]


@pytest.fixture
def unicode_home(tmp_path: Path) -> Path:
    with MemoryStore.open(tmp_path / "store.db", author="me") as store:
        store.remember(TEXT, kind="warning", project="shared")
    return tmp_path


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "SEALMEM_HOME": str(home), **extra}


@pytest.mark.slow
def test_session_start_prints_utf8_to_a_pipe_in_a_legacy_encoding(unicode_home: Path) -> None:
    for encoding in ("cp1252", "ascii"):
        done = subprocess.run(
            [str(SEALMEM), "hook", "session-start"],
            input=json.dumps({"cwd": str(unicode_home)}).encode(),
            capture_output=True,
            env=_env(unicode_home, PYTHONIOENCODING=encoding),
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode()
        assert done.stderr == b""
        assert TEXT in done.stdout.decode("utf-8")


@pytest.mark.slow
def test_a_host_that_closed_the_pipe_does_not_fail_the_hook(unicode_home: Path) -> None:
    proc = subprocess.Popen(
        [str(SEALMEM), "hook", "session-start"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(unicode_home),
    )
    assert proc.stdout is not None
    assert proc.stdin is not None
    assert proc.stderr is not None
    proc.stdout.close()
    proc.stdin.write(json.dumps({"cwd": str(unicode_home)}).encode())
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stderr.read() == b""
    proc.stderr.close()
