"""The MCP server's sessions: one per server process, or the one the client names."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp_types import CallToolResult, TextContent

from sealmem.client import MemoryStore
from sealmem.client.mcp.server import create_server
from tests.support.related_store import write_queue_stack


@pytest.fixture
def server_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    return home


def _text(result: CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def _remember(args: list[dict[str, Any]]) -> list[CallToolResult]:
    out: list[CallToolResult] = []

    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            for arg in args:
                out.append(await client.call_tool("remember", arg))

    anyio.run(session)
    return out


def _origins(home: Path, results: list[CallToolResult]) -> list[str]:
    with MemoryStore.open(home / "store.db") as store:
        return [store.get(json.loads(_text(r))["id"]).record.origin for r in results]


def test_a_client_named_session_is_the_origin(server_home: Path) -> None:
    results = _remember(
        [
            {"content": "Orders live in PostgreSQL 16", "session": "7f3c2a10-task-42"},
            {"content": "The payment SDK is pinned to 4.2.x"},
        ]
    )
    assert not any(r.is_error for r in results)
    named, default = _origins(server_home, results)
    assert named == "mcp:7f3c2a10-task-42"
    assert re.fullmatch(r"mcp:[0-9a-f]{12}", default)  # this server process


def test_the_schema_bounds_the_session_argument(server_home: Path) -> None:
    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            schema = tools["remember"].input_schema["properties"]["session"]
            text = json.dumps(schema)
            assert '"maxLength": 48' in text
            assert "pattern" in text

    anyio.run(session)


@pytest.mark.parametrize("bad", ["", "has space", "x" * 49, "-leading", "a:b", "é"])
def test_a_bad_session_id_is_refused_and_nothing_is_stored(server_home: Path, bad: str) -> None:
    (result,) = _remember([{"content": "Orders live in PostgreSQL 16", "session": bad}])
    assert result.is_error
    assert "session" in _text(result)
    with MemoryStore.open(server_home / "store.db") as store:
        assert store.recent(limit=5, project="webshop") == []


def test_recall_labels_a_related_neighbour_and_says_when_nothing_is_close(
    server_home: Path,
) -> None:
    from sealmem.client.mcp.tools import nothing_close_note

    answers: dict[str, Any] = {}

    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            for content in ("which queue carries the order events?", "RabbitMQ, quorum replicas"):
                await client.call_tool("remember", {"content": content, "session": "t1"})
            for query in ("queue for order events", "kubernetes ingress", "what is the"):
                answers[query] = json.loads(
                    _text(await client.call_tool("recall", {"query": query}))
                )

    anyio.run(session)
    found = answers["queue for order events"]
    assert [h["related"] for h in found["hits"]] == [False, True]
    assert found["hits"][1]["content"] == "RabbitMQ, quorum replicas"
    assert answers["kubernetes ingress"]["hits"] == []
    assert answers["kubernetes ingress"]["note"] == nothing_close_note("kubernetes ingress")
    assert "no memory shares a word" in answers["kubernetes ingress"]["note"]
    assert answers["what is the"]["hits"] == []
    assert "only common words" in answers["what is the"]["note"]


def test_a_recall_of_k_shows_its_k_matches_and_then_the_related_neighbour(
    server_home: Path,
) -> None:
    """Two weak matches (older, other sessions) and a strong one with two session
    neighbours: the recall shows its k matches, then the related neighbour after them
    (it never takes a match's place, and the match never hides it); a related result
    comes from the best k ranks, as the store's own recall of k has it (the tool asks the
    store for 2k to fold near-duplicates: a recall of 1 showed a neighbour ranked 2nd)."""
    write_queue_stack(server_home / "store.db", "mcp")
    answers: dict[str, Any] = {}

    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            for k in (1, 2):
                answers[k] = json.loads(
                    _text(await client.call_tool("recall", {"query": "kafka redis nginx", "k": k}))
                )

    anyio.run(session)
    assert [h["content"] for h in answers[1]["hits"]] == [
        "kafka redis nginx make up the queue stack"
    ]
    hits = answers[2]["hits"]
    assert [h["related"] for h in hits] == [False, False, True]
    assert hits[0]["content"] == "kafka redis nginx make up the queue stack"
    assert hits[1]["content"].startswith("nginx ")
    assert hits[2]["content"] in {
        "the lunch order goes out at noon",
        "the build takes ten minutes on the laptop",
    }
    with MemoryStore.open(server_home / "store.db", author="ana") as store:
        for k in (1, 2):  # what the agent is shown is what the store ranks for k
            own = store.recall("kafka redis nginx", k=k, project="webshop")
            assert [h["id"] for h in answers[k]["hits"]] == [h.memory.id for h in own]
