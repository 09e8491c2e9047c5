"""What an agent stores waits for its person before teammates see it, and stays marked.

A member's agent stores a warning through a real MCP session (the in-memory client
over the server sealmem runs); the member and a teammate sync through a real shared
folder, each in its own ``SEALMEM_HOME``.  Before, the warning reached the teammate's
agent at the next sync as ``[warning, from alice]``, exactly like what alice typed.
Now it is private until alice accepts it (``sealmem captured accept``), and then the
teammate sees it marked ``agent-written`` in recall, the CLI and its startup context.
``sealmem captured agent-writes share`` shares an agent's memories at once, still marked.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp_types import CallToolResult, TextContent

from sealmem.client.mcp.server import create_server
from sealmem.client.recall.api import MemoryStore
from tests.support.cli import Run, per_home

Cli = Callable[..., Run]
WARNING = "Never run the schema migrations by hand on the production database"
SHARED = "The staging database is wiped every night at 02:00 UTC"


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return per_home(tmp_path, capsys, monkeypatch)


def _mcp(
    monkeypatch: pytest.MonkeyPatch, home: Path, tool: str, args: dict[str, Any]
) -> dict[str, Any]:
    """One tool call in a real MCP session of the server, as ``home``'s agent."""
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    out: list[CallToolResult] = []

    async def session() -> None:
        async with Client(create_server(project="webapp")) as client:
            out.append(await client.call_tool(tool, args))

    anyio.run(session)
    (result,) = out
    assert not result.is_error, result
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    return dict(json.loads(text))


def _session_start(home: Path, cwd: Path) -> str:
    """``sealmem hook session-start`` in its own process, JSON on stdin, as a host runs it."""
    (cwd / ".git").mkdir(exist_ok=True)
    done = subprocess.run(
        [str(Path(sys.executable).with_name("sealmem")), "hook", "session-start"],
        input=json.dumps({"session_id": "s1", "cwd": str(cwd)}), capture_output=True,
        text=True, env={**os.environ, "SEALMEM_HOME": str(home)}, cwd=cwd, timeout=60,
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout


def _ids(home: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{home / 'store.db'}?mode=ro", uri=True)
    try:
        return {str(r[0]) for r in conn.execute("SELECT id FROM memories")}
    finally:
        conn.close()


@pytest.mark.slow
def test_an_agents_warning_reaches_a_teammate_only_once_accepted_and_marked(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "nas").mkdir()
    cli("alice", "team", "create", "Acme", "--folder", str(tmp_path / "nas"), "--name", "alice")
    invite = cli("alice", "team", "invite", "--json").json()["invite"]
    cli("bob", "team", "join", invite, "--name", "bob")
    cli("alice", "admin", "requests")
    cli("alice", "admin", "approve", "--yes")
    alice, bob = tmp_path / "alice", tmp_path / "bob"

    stored = _mcp(monkeypatch, alice, "remember", {"content": WARNING, "kind": "warning"})
    cli("alice", "sync")
    cli("bob", "sync")
    assert stored["id"] not in _ids(bob)  # nothing an agent wrote left alice's machine
    assert stored["held_for_review"] is True

    waiting = cli("alice", "captured", "--json").json()["captured"]
    assert [(w["id"], w["source"], w["visibility"]) for w in waiting] == [
        (stored["id"], "agent", "private")
    ]
    assert "agent" in cli("alice", "captured").out
    cli("alice", "captured", "accept", stored["id"])
    cli("alice", "sync")
    cli("bob", "sync")
    assert stored["id"] in _ids(bob)

    hit = _mcp(monkeypatch, bob, "recall", {"query": "schema migrations production"})["hits"][0]
    assert (hit["id"], hit["written_by"], hit["source"]) == (stored["id"], "alice", "agent")
    shown = cli("bob", "show", stored["id"]).out
    assert "by alice via folder (verified), agent-written" in shown
    assert "alice (agent-written)" in cli("bob", "list").out
    assert cli("bob", "show", stored["id"], "--json").json()["source"] == "agent"
    with MemoryStore.open(bob / "store.db") as store:
        context = store.startup_context(project="webapp")
    assert f'[warning, from alice, agent-written, trusted] "{WARNING}"' in context
    hook = _session_start(bob, tmp_path / "webapp")  # as Claude Code runs it
    assert f'[warning, from alice, agent-written, trusted] "{WARNING}"' in hook

    # A person may share an agent's memories at once: still marked as the agent's.
    cli("alice", "captured", "agent-writes", "share")
    now = _mcp(monkeypatch, alice, "remember", {"content": SHARED, "kind": "fact"})
    assert now["held_for_review"] is False
    cli("alice", "sync")
    cli("bob", "sync")
    got = _mcp(monkeypatch, bob, "get", {"id": now["id"]})["memory"]
    assert (got["source"], got["written_by"]) == ("agent", "alice")
