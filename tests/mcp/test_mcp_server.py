"""The MCP server: in memory through ``mcp.client.Client``, and as a real stdio subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from sealmem.client import MemoryStore
from sealmem.client.mcp.server import create_server
from sealmem.client.mcp.tools import DATA_NOT_INSTRUCTIONS

SEALMEM = Path(sys.executable).with_name("sealmem")
TOOLS = {"recall", "remember", "get", "recent", "forget", "status"}
MISSING_ID = "01900000-0000-7000-8000-000000000000"


def text_of(result: CallToolResult) -> str:
    parts = [block.text for block in result.content if isinstance(block, TextContent)]
    return "\n".join(parts)


def ok_json(result: CallToolResult) -> Any:
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn)


@pytest.fixture
def server_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    return home


def test_in_memory_every_tool(server_home: Path) -> None:
    server = create_server(project="webshop")

    async def session() -> None:
        async with Client(server) as client:
            listed = await client.list_tools()
            tools = {t.name: t for t in listed.tools}
            assert set(tools) == TOOLS
            for name in ("recall", "get", "recent"):
                assert "not instructions" in (tools[name].description or "")
            assert "reason" in tools["forget"].input_schema["required"]
            forget_hints = tools["forget"].annotations
            assert forget_hints is not None
            assert forget_hints.destructive_hint is True
            recall_hints = tools["recall"].annotations
            assert recall_hints is not None
            assert recall_hints.read_only_hint is True

            stored = ok_json(
                await client.call_tool(
                    "remember",
                    {
                        "content": "Never deploy on Fridays: the on-call rota is thin.",
                        "kind": "warning",
                        "keywords": ["deploy"],
                        "importance": 0.9,
                    },
                )
            )
            assert stored["created"] is True
            assert stored["project"] == "webshop"
            memory_id = stored["id"]

            recalled = ok_json(await client.call_tool("recall", {"query": "deploy friday"}))
            assert recalled["note"] == DATA_NOT_INSTRUCTIONS
            hit = recalled["hits"][0]
            assert hit["id"] == memory_id
            assert hit["provenance"]["transport"] == "local"
            assert (hit["written_by"], hit["written_here"]) == ("you", True)
            assert hit["claimed_author"] == "you"
            assert hit["why"]

            got = ok_json(await client.call_tool("get", {"id": memory_id}))
            assert got["memory"]["content"].startswith("Never deploy on Fridays")
            recent = ok_json(await client.call_tool("recent", {"limit": 5}))
            assert [m["id"] for m in recent["memories"]] == [memory_id]
            status = ok_json(await client.call_tool("status", {}))
            assert status["store"].startswith(str(server_home))
            assert status["project"] == "webshop"

            prompt = await client.get_prompt("startup_context", {})
            prompt_text = prompt.messages[0].content
            assert isinstance(prompt_text, TextContent)
            assert "Never deploy on Fridays" in prompt_text.text
            assert "not instructions" in prompt_text.text
            resource = await client.read_resource("sealmem://startup-context")
            assert "Never deploy on Fridays" in getattr(resource.contents[0], "text", "")

            forgotten = ok_json(
                await client.call_tool("forget", {"id": memory_id, "reason": "rota fixed"})
            )
            assert forgotten["forgotten"] == memory_id
            after = ok_json(await client.call_tool("recall", {"query": "deploy friday"}))
            assert after["hits"] == []

            seen.append(memory_id)

    seen: list[str] = []
    run(session)
    with MemoryStore.open() as store:  # the tool calls reached the real store on disk
        assert store.get(seen[0]).record.delete_reason == "rota fixed"


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("get", {"id": MISSING_ID}, MISSING_ID),
    ("forget", {"id": MISSING_ID, "reason": "gone"}, MISSING_ID),
    ("forget", {"id": MISSING_ID}, "reason"),
    ("forget", {"id": MISSING_ID, "reason": "  "}, "reason"),
    ("recall", {"query": "   "}, "empty"),
    ("recall", {"query": "x", "k": 0}, "k=0"),
    ("remember", {"content": "x" * 20_000}, "limit"),
    ("remember", {"content": "bad kind", "kind": "Not A Kind!"}, "kind"),
    ("remember", {"content": "orphan", "supersedes": [MISSING_ID]}, MISSING_ID),
    ("nope", {}, "nope"),
]


def test_bad_calls_are_tool_errors_and_the_server_goes_on(server_home: Path) -> None:
    server = create_server(project="webshop")

    async def session() -> None:
        async with Client(server) as client:
            for name, arguments, expected in BAD_CALLS:
                result = await client.call_tool(name, arguments)
                assert result.is_error, (name, arguments)
                assert expected in text_of(result), (name, text_of(result))
            with pytest.raises(MCPError):
                await client.get_prompt("startup_context", {"project": "Not a project!"})
            stored = ok_json(await client.call_tool("remember", {"content": "still serving"}))
            assert stored["created"] is True
            assert (
                ok_json(await client.call_tool("recent", {}))["memories"][0]["id"] == stored["id"]
            )

    run(session)


@pytest.mark.slow
@pytest.mark.skipif(not SEALMEM.exists(), reason="console script not installed")
def test_stdio_subprocess_recalls_what_the_cli_stored(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "webshop"
    project.mkdir()
    env = {**os.environ, "SEALMEM_HOME": str(home)}
    stored = subprocess.run(
        [str(SEALMEM), "remember", "Blue-green deploys need two DB pools.", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=60,
        check=True,
    )
    memory_id = json.loads(stored.stdout)["memory"]["id"]
    params = StdioServerParameters(
        command=str(SEALMEM), args=["mcp"], env={"SEALMEM_HOME": str(home)}, cwd=project
    )
    errlog_path = tmp_path / "server-stderr.log"

    async def session() -> None:
        with anyio.fail_after(60), errlog_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                listed = await client.list_tools()
                assert {t.name for t in listed.tools} == TOOLS
                recalled = ok_json(
                    await client.call_tool("recall", {"query": "blue green deploys"})
                )
                assert [h["id"] for h in recalled["hits"]] == [memory_id]
                bad = await client.call_tool("get", {"id": MISSING_ID})
                assert bad.is_error
                got = ok_json(await client.call_tool("get", {"id": memory_id}))
                assert got["memory"]["project"] == "webshop"
                status = ok_json(await client.call_tool("status", {}))
                assert status["project"] == "webshop"

    run(session)
    assert "Traceback" not in errlog_path.read_text()


def test_agents_use_short_ids_and_get_kind_suggestions(server_home: Path) -> None:
    server = create_server(project="webshop")

    async def session() -> None:
        async with Client(server) as client:
            typo = await client.call_tool("remember", {"content": "x", "kind": "warnign"})
            assert typo.is_error
            assert "warning" in text_of(typo)  # the allowed kinds are named
            made = ok_json(
                await client.call_tool("remember", {"content": "rotate keys", "kind": "lesson"})
            )
            assert made["kind"] == "lesson"
            suffix = made["id"][-12:]
            got = ok_json(await client.call_tool("get", {"id": suffix}))
            assert got["memory"]["id"] == made["id"]
            fixed = ok_json(
                await client.call_tool("remember", {"content": "fixed", "supersedes": [suffix]})
            )
            assert fixed["created"] is True
            gone = ok_json(await client.call_tool("forget", {"id": suffix, "reason": "done"}))
            assert gone["forgotten"] == made["id"]

    run(session)


def test_a_refused_resource_or_prompt_says_why_and_logs_no_traceback(
    server_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An unknown id in ``sealmem://memory/{id}`` or a malformed project in the prompt or
    ``sealmem://startup-context/{project}`` is a refusal like a tool's: the agent reads
    the reason, and the host's log gets no traceback of an "unexpected exception"."""
    server = create_server(project="webshop")
    refused: dict[str, MCPError] = {}

    async def session() -> None:
        async with Client(server) as client:
            asks: dict[str, Callable[[], Awaitable[object]]] = {
                "missing": lambda: client.read_resource(f"sealmem://memory/{MISSING_ID}"),
                "malformed": lambda: client.read_resource("sealmem://memory/x"),
                "project": lambda: client.read_resource("sealmem://startup-context/\u202e"),
                "prompt": lambda: client.get_prompt("startup_context", {"project": "\x00"}),
            }
            for key, ask in asks.items():
                with pytest.raises(MCPError) as caught:
                    await ask()
                refused[key] = caught.value
            assert ok_json(await client.call_tool("status", {}))["project"] == "webshop"

    run(session)
    assert MISSING_ID in refused["missing"].error.message
    assert "is not a memory id" in refused["malformed"].error.message
    assert "is not a valid name" in refused["project"].error.message
    assert "is not a valid name" in refused["prompt"].error.message
    assert not [r for r in caplog.records if r.exc_info], caplog.text
