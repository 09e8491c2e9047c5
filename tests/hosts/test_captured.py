"""Captured memories stay on the machine until a person accepts them.

The Stop hook runs as Claude Code runs it (the console script, JSON on stdin)
over the transcript fixture; a real two-member team syncs through a real
shared folder.  The teammate receives nothing captured until ``sealmem captured
accept``; a discarded capture never reaches anyone.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client.recall.api import MemoryStore
from sealmem.protocol.errors import InputError
from tests.hosts.conftest import FIXTURES, SEALMEM, Env
from tests.support.cli import Run, in_process

Member = Callable[..., Run]


@pytest.fixture
def member(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Member:
    """``member(who, *args)``: the CLI in-process in the home ``tmp_path/who``, exit code 0."""
    run = in_process(capsys, monkeypatch)

    def as_(who: str, *args: str, code: int = 0) -> Run:
        monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / who))
        done = run(*args)
        assert done.code == code, done
        return done

    return as_


def _stop_hook(env: Env, home: Path) -> None:
    """``sealmem hook stop`` on the transcript fixture, in its own process, as hosts run it."""
    transcript = env.project / "session.jsonl"
    shutil.copyfile(FIXTURES / "transcript.jsonl", transcript)
    payload = {"session_id": "s1", "cwd": str(env.project), "transcript_path": str(transcript)}
    done = subprocess.run(
        [str(SEALMEM), "hook", "stop"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env={**env.environ, "SEALMEM_HOME": str(home)},
        cwd=env.project,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    log = (home / "logs" / "hooks.log").read_text(encoding="utf-8").splitlines()
    assert log[-1].split()[1:3] == ["stop", "ok-silent"]  # it ran to the end in time


def _team(member: Member, tmp_path: Path) -> None:
    """alice creates a team over a folder; bob joins; alice approves him."""
    folder = tmp_path / "nas"
    folder.mkdir()
    member("alice", "team", "create", "Acme", "--folder", str(folder), "--name", "alice")
    invite = member("alice", "team", "invite", "--json").json()["invite"]
    member("bob", "team", "join", invite, "--name", "bob")
    member("alice", "admin", "requests")
    member("alice", "admin", "approve", "--yes")


def _held(tmp_path: Path, who: str) -> dict[str, tuple[str, str]]:
    """Every memory in ``who``'s store (tombstones too): id -> (visibility, content)."""
    conn = sqlite3.connect(f"file:{tmp_path / who / 'store.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, visibility, content FROM memories").fetchall()
    finally:
        conn.close()
    return {str(r[0]): (str(r[1]), str(r[2])) for r in rows}


@pytest.mark.slow
def test_a_teammate_gets_a_capture_only_once_it_is_accepted(
    env: Env, tmp_path: Path, member: Member
) -> None:
    _team(member, tmp_path)
    _stop_hook(env, tmp_path / "alice")
    # Nothing captured leaves the machine on its own.
    member("alice", "sync")
    member("bob", "sync")
    assert _held(tmp_path, "bob") == {}

    waiting = member("alice", "captured", "--json").json()["captured"]
    assert len(waiting) >= 3
    assert {w["visibility"] for w in waiting} == {"private"}
    assert {w["source"] for w in waiting} == {"hook"}  # marked as the hook's, not alice's
    assert {w["project"] for w in waiting} == {"webshop"}
    assert any(w["content"].startswith("We pin the payment SDK to 4.2.x") for w in waiting)
    listed = member("alice", "captured").out
    for w in waiting:
        assert w["id"][-12:] in listed
    assert "sealmem captured accept" in listed

    pin = next(w for w in waiting if w["content"].startswith("We pin the payment SDK"))
    accepted = member("alice", "captured", "accept", pin["id"][-12:], "--json").json()
    assert [(a["id"], a["visibility"]) for a in accepted["accepted"]] == [(pin["id"], "team")]
    assert pin["id"] not in {
        w["id"] for w in member("alice", "captured", "--json").json()["captured"]
    }
    member("alice", "sync")
    member("bob", "sync")
    assert _held(tmp_path, "bob") == {pin["id"]: ("team", pin["content"])}

    # A discarded capture is forgotten here and never reaches anyone.
    dropped = next(w for w in waiting if w["id"] != pin["id"])
    gone = member("alice", "captured", "discard", dropped["id"], "--json").json()
    assert gone == {"discarded": [dropped["id"]]}
    alice = member("alice", "show", dropped["id"], "--json").json()
    assert (alice["deleted"], alice["delete_reason"], alice["content"]) == (
        True,
        "discarded capture",
        "",
    )
    member("alice", "sync")
    member("bob", "sync")
    assert set(_held(tmp_path, "bob")) == {pin["id"]}

    # --all shares the rest; the discarded one stays behind.
    rest = {w["id"] for w in waiting} - {pin["id"], dropped["id"]}
    member("alice", "captured", "accept", "--all")
    assert member("alice", "captured", "--json").json() == {
        "captured": [],
        "teammates": [],
        "forgets": [],
    }
    member("alice", "sync")
    member("bob", "sync")
    assert set(_held(tmp_path, "bob")) == {pin["id"], *rest}


def _captured(store: MemoryStore, text: str) -> str:
    return store.remember(
        text, project="webshop", private=True, origin="claude-code", source="hook"
    ).memory.id


@pytest.mark.slow
def test_accept_and_discard_touch_only_captured_memories(cli: Member, store: MemoryStore) -> None:
    mine = store.remember("We release on Thursdays.", project="webshop").memory.id
    note = store.remember("My editor uses tabs.", project="webshop", private=True).memory.id
    first = _captured(store, "Never share one SQLite file between xdist workers.")
    second = _captured(store, "The CI runners have no Docker at all.")
    listed = cli("captured", "--json").json()["captured"]
    assert {c["id"] for c in listed} == {first, second}  # captured ones only

    for refused in (
        cli("captured", "accept", first, mine),  # checked before anything changes
        cli("captured", "discard", note),
        cli("captured", "accept"),
        cli("captured", "accept", first, "--all"),
    ):
        assert refused.code == 1
        assert refused.err.startswith("error: ")
    assert (
        "not captured by a hook or stored by an agent" in cli("captured", "accept", first, mine).err
    )
    assert store.get(first).record.visibility == "private"
    assert not store.get(note).record.deleted

    assert cli("captured", "accept", first).code == 0
    shared = cli("captured", "discard", first)
    assert shared.code == 1
    assert f"sealmem forget {first[-12:]} --reason" in shared.err
    again = cli("captured", "accept", first, "--json").json()["accepted"]
    assert [(a["id"], a["already_shared"]) for a in again] == [(first, True)]

    assert cli("captured", "discard", second).code == 0
    dead = cli("captured", "accept", second)
    assert (dead.code, "was discarded (discarded capture)" in dead.err) == (1, True)
    assert cli("captured").out == "no captured memories waiting for review\n"


def test_share_makes_a_team_version_and_keeps_the_private_one_in_history(
    store: MemoryStore,
) -> None:
    memory_id = _captured(store, "Pin the payment SDK to 4.2.x until the refund API settles.")
    private = store.get(memory_id).record
    shared = store.share(memory_id[-12:])
    assert shared.id == memory_id
    assert shared.record.visibility == "team"
    assert shared.record.content == private.content
    assert (shared.record.hlc.wall, shared.record.hlc.counter) > (
        private.hlc.wall,
        private.hlc.counter,
    )
    assert [v.record.visibility for v in store.history(memory_id)] == ["private"]
    assert store.share(memory_id) == store.get(memory_id)  # already shared: unchanged
    store.forget(memory_id, reason="wrong")
    with pytest.raises(InputError, match="is forgotten"):
        store.share(memory_id)
