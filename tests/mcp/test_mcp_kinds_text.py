"""MCP ``remember`` takes ``new_kind`` (README and the store's refusal name it), ``recall``
takes any kind the store holds, and the text twin of a result is compact JSON (it was
the SDK's indented dump: 2.4 kB for two hits, beside the same structured copy)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp.client.client import Client
from mcp_types import CallToolResult, TextContent

from sealmem.client.mcp.server import create_server


@pytest.fixture
def server_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    return home


def text_of(result: CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def test_a_new_kind_on_purpose_then_recalled_by_it(server_home: Path) -> None:
    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            typo = {"content": "Cache keys carry the schema version", "kind": "gotcha"}
            refused = await client.call_tool("remember", typo)
            assert refused.is_error
            assert "unknown kind 'gotcha'" in text_of(refused)
            assert "new_kind" in text_of(refused)
            made = await client.call_tool("remember", {**typo, "new_kind": True})
            assert not made.is_error, text_of(made)
            assert made.structured_content is not None
            assert made.structured_content["kind"] == "gotcha"
            hits = await client.call_tool("recall", {"query": "cache keys", "kinds": ["Gotcha"]})
            assert not hits.is_error, text_of(hits)
            assert hits.structured_content is not None
            found = [h["kind"] for h in hits.structured_content["hits"]]
            assert found == ["gotcha"]

    anyio.run(session)


def test_the_text_twin_is_compact_json(server_home: Path) -> None:
    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            for text in ("Deploys use the blue pool", "Deploys roll back with the pool flag"):
                assert not (await client.call_tool("remember", {"content": text})).is_error
            result = await client.call_tool("recall", {"query": "deploys pool"})
            assert result.structured_content is not None
            assert len(result.structured_content["hits"]) == 2
            (block,) = result.content
            assert isinstance(block, TextContent)
            assert json.loads(block.text) == result.structured_content
            indented = json.dumps(result.structured_content, indent=2)
            assert "\n" not in block.text
            assert len(block.text) < 0.8 * len(indented), (len(block.text), len(indented))

    anyio.run(session)


def test_every_refusal_starts_with_the_tool_name_alone(server_home: Path) -> None:
    """A refused call and a refused argument read alike (the store's refusal used to
    start "Error executing tool get:", an argument's "recall:")."""

    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            missing = await client.call_tool("get", {"id": "01900000-0000-7000-8000-000000000000"})
            empty = await client.call_tool("recall", {"query": "   "})
            bad_k = await client.call_tool("recall", {"query": "x", "k": 0})
            for tool, result in (("get", missing), ("recall", empty), ("recall", bad_k)):
                assert result.is_error
                assert text_of(result).startswith(f"{tool}: "), text_of(result)
                assert "Error executing tool" not in text_of(result)

    anyio.run(session)
