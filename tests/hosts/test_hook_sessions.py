"""The Claude Code hooks record the host's session on what they write."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable

from sealmem.client.recall.api import MemoryStore
from tests.hosts.conftest import FIXTURES, Env, Run

Script = Callable[..., Run]


def _stop(cli: Script, env: Env, name: str, **payload: str) -> None:
    transcript = env.project / name
    shutil.copyfile(FIXTURES / "transcript.jsonl", transcript)
    stdin = json.dumps({"cwd": str(env.project), "transcript_path": str(transcript), **payload})
    run = cli("hook", "stop", stdin=stdin)
    assert (run.code, run.out) == (0, "")


def _origins(store: MemoryStore) -> set[str]:
    return {m.record.origin for m in store.recent(limit=100, project="webshop")}


def test_the_stop_hook_records_the_session_id_of_its_input(
    cli: Script, env: Env, store: MemoryStore
) -> None:
    session = "0b6f1c2e-7d3a-4f5e-9a8b-1c2d3e4f5a6b"
    _stop(cli, env, "a.jsonl", session_id=session)
    assert _origins(store) == {f"claude-code:{session}"}


def test_without_a_session_id_the_transcript_name_is_the_session(
    cli: Script, env: Env, store: MemoryStore
) -> None:
    _stop(cli, env, "5d1e0c3a-1111-4222-8333-944455556666.jsonl")
    assert _origins(store) == {"claude-code:5d1e0c3a-1111-4222-8333-944455556666"}
