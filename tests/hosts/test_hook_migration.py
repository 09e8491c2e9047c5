"""A hook never starts a store migration: one may outlast its budget (migration 11 takes
some 14 s on a 30k-row store), be cut off and rolled back, and start again at every
prompt.  A store lacking only data-only steps is used as it is; one that needs a schema
step first is skipped, silently, the stop hook's transcript kept for after it.  The next
command that writes migrates, and the hook's log line says so."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable

import pytest

from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from sealmem.client.store.connection import connect
from sealmem.client.store.schema import MIGRATIONS, latest_version
from tests.hosts.conftest import FIXTURES, Env, Run
from tests.support.framed import framed, q

pytestmark = pytest.mark.slow

Script = Callable[..., Run]
PORT = "The billing service listens on port 8080 behind the proxy."
KOREAN = "서버가 새벽에 다운됐다"


def _stdin(env: Env, **extra: str) -> str:
    return json.dumps({"session_id": "s1", "cwd": str(env.project), **extra})


def _version(env: Env) -> int:
    conn = sqlite3.connect(store_path(env.state))
    try:
        return int(conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0])
    finally:
        conn.close()


def _last_log(env: Env) -> str:
    return (env.state / "logs" / "hooks.log").read_text(encoding="utf-8").splitlines()[-1]


def _store_of_version_10(env: Env) -> str:
    """Rows as version 10 wrote them (no Hangul bigrams in the Korean row's grams), and
    migration 11 not recorded; the Korean memory's id."""
    with MemoryStore.open(store_path(env.state), author=local_author(env.state)) as store:
        store.remember(PORT, kind="fact", project="webshop")
        korean = store.remember(KOREAN, project="webshop").memory.id
        conn = store.connection
        conn.execute(
            "UPDATE memories SET grams = NULL, stems = ? WHERE id = ?",
            ("다운됐다 새벽에 서버가", korean),
        )
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
        conn.execute("DELETE FROM schema_migrations WHERE version > 10")
    return korean


def test_the_prompt_hook_uses_a_store_of_version_10_and_the_next_command_migrates(
    script: Script, cli: Script, env: Env
) -> None:
    korean = _store_of_version_10(env)
    env.environ["SEALMEM_HOOK_BUDGET_S"] = "2"  # the default time bound, under test
    asked = _stdin(env, prompt="which port does the billing service listen on?")
    hit = script("hook", "prompt", stdin=asked)
    assert (hit.code, hit.err) == (0, "")
    assert framed(hit.out) == [q("fact", PORT)]  # within its budget
    assert _version(env) == 10  # migration 11 was not run
    line = _last_log(env)
    assert line.split()[1:3] == ["prompt", "ok"]
    assert f"store at schema 10 of {latest_version()}, used as it is: a hook never migrates" in line

    assert cli("init").code == 0  # the next command that writes migrates
    assert _version(env) == latest_version()
    with MemoryStore.open(store_path(env.state), readonly=True) as store:
        found = [h.memory.id for h in store.recall("서버를", k=3, project="webshop")]
        assert found[:1] == [korean]
    assert "8080" in script("hook", "prompt", stdin=asked).out
    assert "; " not in _last_log(env)  # a current store: no note


def test_a_hook_on_a_store_needing_a_schema_step_is_skipped_and_captures_after(
    script: Script, cli: Script, env: Env
) -> None:
    path = store_path(env.state)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    connect(path, migrations=MIGRATIONS[:9]).close()  # before migration 10 (a new column)
    transcript = env.project / "session.jsonl"
    shutil.copyfile(FIXTURES / "transcript.jsonl", transcript)
    for name, extra in (
        ("session-start", {}),
        ("prompt", {"prompt": "which port does the billing service listen on?"}),
        ("stop", {"transcript_path": str(transcript)}),
    ):
        run = script("hook", name, stdin=_stdin(env, **extra))
        assert (run.code, run.out, run.err) == (0, "", "")  # no prose of ours to the agent
        line = _last_log(env)
        assert line.split()[1:3] == [name, "skipped"]
        assert "store at schema 9 needs migration 10 first: a hook never migrates" in line
    assert _version(env) == 9

    assert cli("init").code == 0
    assert _version(env) == latest_version()
    run = script("hook", "stop", stdin=_stdin(env, transcript_path=str(transcript)))
    assert (run.code, run.out, _last_log(env).split()[1:3]) == (0, "", ["stop", "ok-silent"])
    with MemoryStore.open(path, readonly=True) as store:  # the skipped turns, captured now
        texts = [m.record.content for m in store.recent(limit=50, project="webshop")]
    assert any(t.startswith("We pin the payment SDK to 4.2.x") for t in texts)
