"""Teammates are shown by name: recall in the CLI and the MCP tools say who wrote a memory."""

from __future__ import annotations

import anyio

from sealmem.client.mcp.tools import MemoryTools
from sealmem.client.recall.names import member_names
from tests.sync.conftest import PROJECT, World


def test_names_come_from_the_accepted_roster(world: World) -> None:
    alice, bob = world.nodes["alice"], world.nodes["bob"]
    mem = alice.remember("the payments queue must stay FIFO", kind="warning")
    alice.sync()
    bob.sync()
    names = member_names(bob.store.connection)
    assert names[alice.key.kid] == "alice"
    assert names[bob.key.kid] == "bob"

    tools = MemoryTools(lambda: bob.store, PROJECT)
    doc = anyio.run(tools.recall, "payments queue FIFO").model_dump()
    (hit,) = [h for h in doc["hits"] if h["id"] == mem.id]
    assert (hit["written_by"], hit["written_here"], hit["claimed_author"]) == (
        "alice", False, "alice",
    )  # fmt: skip
    assert hit["provenance"] == {"transport": "folder", "signer": "alice", "verified": True}
    status = anyio.run(tools.status).model_dump()
    assert status["sync"]["configured"] is True
    assert status["sync"]["last_sync"] is not None


def test_a_store_without_a_team_has_no_names(world: World) -> None:
    admin = world.nodes["admin"]
    admin.store.connection.execute("DELETE FROM team_objects")
    assert member_names(admin.store.connection) == {}
