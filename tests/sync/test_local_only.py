"""A member learns which team memories stay on its machine because it may not write
their project: at ``remember`` (CLI and MCP), at ``sync`` (once per project, with a
count; once per change under ``--watch``) and in ``team status``."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp.client.client import Client
from mcp_types import TextContent

from sealmem.client import MemoryStore
from sealmem.client.mcp.server import create_server
from sealmem.client.store import agentwrites
from sealmem.client.sync.engine import SyncSummary
from sealmem.client.sync.local_only import stays_local
from sealmem.client.sync.watch import watch
from sealmem.client.team import admin
from sealmem.protocol.errors import SealmemError
from tests.support.cli import Run, in_process

from .conftest import PROJECT, Node, World

GRANT_FIX = f"sealmem admin grant bob {PROJECT} --write"


@pytest.fixture
def read_only_bob(world: World) -> Node:
    """bob may read ``webapp`` but not write it (and still writes ``shared``)."""
    adm, bob = world.nodes["admin"], world.nodes["bob"]
    admin.grant(adm.t, "bob", PROJECT, read=True, write=False, now=adm.clock())
    bob.sync()
    assert not bob.t.roster().can_write(bob.key.kid, PROJECT)
    return bob


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    return in_process(capsys, monkeypatch)


def as_bob(monkeypatch: pytest.MonkeyPatch, bob: Node) -> None:
    monkeypatch.setenv("SEALMEM_HOME", str(bob.home))


def local_warnings(summary: SyncSummary) -> list[str]:
    return [w for w in summary.warnings if " on this machine: " in w]


@pytest.mark.slow
def test_cli_remember_notes_a_project_bob_may_not_write(
    read_only_bob: Node, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    as_bob(monkeypatch, read_only_bob)
    done = cli("remember", "webapp caches sessions in redis", "-p", PROJECT)
    assert done.code == 0, done
    assert "remembered" in done.out
    notes = [line for line in done.err.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1, done.err
    assert f"1 team memory stays in {PROJECT!r} on this machine" in notes[0]
    assert "you may read 'webapp' but not write it" in notes[0]
    assert GRANT_FIX in notes[0]

    as_json = cli("remember", "a second one for webapp", "-p", PROJECT, "--json").json()
    assert as_json["stays_local"]["count"] == 2
    assert as_json["stays_local"]["reason"] == "read-only"
    assert GRANT_FIX in as_json["stays_local"]["fix"]

    # a project bob writes, and a private memory, say nothing
    shared = cli("remember", "the shared tier is for everyone", "-p", "shared")
    assert shared.code == 0, shared
    assert "note:" not in shared.err
    private = cli("remember", "my own webapp scratch note", "-p", PROJECT, "--private")
    assert private.code == 0, private
    assert "note:" not in private.err
    assert cli("remember", "x" * 20, "-p", "shared", "--json").json()["stays_local"] is None


def test_cli_remember_solo_says_nothing(
    tmp_path: Path, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / "solo"))
    done = cli("remember", "a note in a store that is in no team", "-p", PROJECT)
    assert done.code == 0, done
    assert done.err == ""
    doc = cli("remember", "another one", "-p", PROJECT, "--json").json()
    assert doc["stays_local"] is None


@pytest.mark.slow
def test_sync_warns_once_per_project_with_the_count(
    world: World,
    read_only_bob: Node,
    cli: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bob = read_only_bob
    for n in range(3):
        bob.remember(f"webapp memory number {n} stays here")
    bob.remember("private ones are not counted", private=True)
    bob.remember("unregistered project memory", project="scratchpad")
    bob.remember("a shared memory is pushed", project="shared")
    as_bob(monkeypatch, bob)
    done = cli("sync")
    assert done.code == 0, done
    lines = [line for line in done.err.splitlines() if " on this machine: " in line]
    assert len(lines) == 2, done.err  # one per project, not one per memory
    webapp = next(line for line in lines if f"in {PROJECT!r}" in line)
    assert webapp.startswith("warning: 3 team memories stay in 'webapp' on this machine: ")
    assert GRANT_FIX in webapp
    scratch = next(line for line in lines if "'scratchpad'" in line)
    assert "1 team memory stays in 'scratchpad'" in scratch
    assert "not registered in the team" in scratch

    doc = cli("sync", "--json").json()
    by_project = {x["project"]: x for x in doc["local_only"]}
    assert by_project[PROJECT]["count"] == 3
    assert by_project[PROJECT]["reason"] == "read-only"
    assert by_project["scratchpad"]["reason"] == "unregistered-project"
    assert "shared" not in by_project


@pytest.mark.slow
def test_team_status_shows_the_count_the_reason_and_the_fix(
    world: World,
    read_only_bob: Node,
    cli: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bob = read_only_bob
    bob.remember("first webapp note")
    bob.remember("second webapp note")
    bob.remember("bob's private webapp note", private=True)
    as_bob(monkeypatch, bob)
    doc = cli("team", "status", "--json").json()
    assert [(x["project"], x["count"], x["reason"]) for x in doc["local_only"]] == [
        (PROJECT, 2, "read-only")
    ]
    assert GRANT_FIX in doc["local_only"][0]["fix"]
    text = cli("team", "status")
    assert text.code == 0, text
    assert f"{PROJECT}: 2 (you may read 'webapp' but not write it); ask an admin" in text.out
    # alice writes webapp: once her join is approved and seen, nothing of hers stays local
    alice = world.nodes["alice"]
    alice.remember("alice's webapp note")
    pending = alice.t.status()["local_only"]
    assert [(x["project"], x["reason"]) for x in pending] == [(PROJECT, "not-member")]
    alice.sync()
    assert alice.t.status()["local_only"] == []


def test_mcp_remember_says_the_memory_stays_local(read_only_bob: Node) -> None:
    bob = read_only_bob

    def opener() -> MemoryStore:
        return MemoryStore.open(bob.home / "store.db", author=bob.key.kid)

    with opener() as store:  # agent writes shared at once: else they wait, private
        agentwrites.set_policy(store.connection, "share")
    server = create_server(project=PROJECT, opener=opener)

    async def session() -> None:
        async with Client(server) as client:
            result = await client.call_tool("remember", {"content": "webapp uses redis"})
            assert not result.is_error
            text = "".join(b.text for b in result.content if isinstance(b, TextContent))
            doc = json.loads(text)
            assert doc["stays_local"]["reason"] == "read-only"
            assert doc["stays_local"]["count"] == 1
            assert "stays in 'webapp' on this machine" in doc["stays_local"]["message"]
            assert GRANT_FIX in doc["stays_local"]["fix"]
            shared = await client.call_tool(
                "remember", {"content": "shared knowledge", "project": "shared"}
            )
            text = "".join(b.text for b in shared.content if isinstance(b, TextContent))
            assert json.loads(text)["stays_local"] is None

    anyio.run(session)


def test_after_a_write_grant_the_note_goes_and_the_memories_are_pushed(
    world: World, read_only_bob: Node
) -> None:
    adm, alice, bob = world.nodes["admin"], world.nodes["alice"], world.nodes["bob"]
    written = [bob.remember(f"bob's webapp finding {n}") for n in range(2)]
    assert stays_local(bob.store.connection, bob.key.kid, PROJECT) is not None
    first = bob.sync()
    assert first.pushed_versions == 0
    assert [(x.project, x.count) for x in first.local_only] == [(PROJECT, 2)]
    alice.sync()
    assert not set(alice.memories()) & {m.id for m in written}

    admin.grant(adm.t, "bob", PROJECT, read=True, write=True, now=adm.clock())
    after = bob.sync()
    assert after.local_only == []
    assert local_warnings(after) == []
    assert after.pushed_versions == 2
    assert stays_local(bob.store.connection, bob.key.kid, PROJECT) is None
    assert bob.t.status()["local_only"] == []
    alice.sync()
    assert {m.id for m in written} <= set(alice.memories())


def test_revoked_member_learns_its_memories_stay_local(world: World) -> None:
    adm, carol = world.nodes["admin"], world.nodes["carol"]
    carol.sync()
    admin.revoke(adm.t, "carol", now=adm.clock())
    carol.remember("carol writes after her revocation")
    summary = carol.sync()
    assert [(x.project, x.reason) for x in summary.local_only] == [(PROJECT, "revoked")]
    note = stays_local(carol.store.connection, carol.key.kid, PROJECT)
    assert note is not None
    assert note.reason == "revoked"


@pytest.mark.slow
def test_watch_repeats_the_warning_only_when_the_count_changes(read_only_bob: Node) -> None:
    bob = read_only_bob
    bob.remember("stays local under watch")
    summaries: list[SyncSummary] = []
    stop = threading.Event()
    errors: list[SealmemError] = []

    def on_sync(summary: SyncSummary) -> None:
        summaries.append(summary)
        if len(summaries) == 3:
            bob.remember("a second one: the count changes")
        if len(summaries) >= 6:
            stop.set()

    timer = threading.Timer(60.0, stop.set)  # a hung watcher fails, not blocks
    timer.start()
    try:
        watch(bob.t, on_sync=on_sync, on_error=errors.append, interval_s=0.2, stop=stop)
    finally:
        timer.cancel()
    assert not errors
    assert len(summaries) >= 6
    shown = [w for s in summaries for w in local_warnings(s)]
    assert len(shown) == 2, shown
    assert shown[0].startswith("1 team memory stays in 'webapp'")
    assert shown[1].startswith("2 team memories stay in 'webapp'")
    assert all(s.local_only for s in summaries)  # the structured state is always there
