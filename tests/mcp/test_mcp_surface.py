"""What an agent reads from the MCP server: typed results, described parameters, a version."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, TextContent, Tool

from sealmem.client.mcp.server import create_server
from sealmem.client.mcp.tools import MAX_RECENT
from sealmem.client.recall.api import MAX_K
from sealmem.protocol.record import KIND_RE

SEALMEM = Path(sys.executable).with_name("sealmem")
MISSING_ID = "01900000-0000-7000-8000-000000000000"


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn)


@pytest.fixture
def server_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    return home


def text_of(result: CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def structured(tool: Tool, result: CallToolResult) -> dict[str, Any]:
    """The structured result, checked against the tool's schema and its text twin."""
    assert not result.is_error, text_of(result)
    assert tool.output_schema is not None
    content = result.structured_content
    assert isinstance(content, dict)
    jsonschema.validate(content, tool.output_schema)
    assert json.loads(text_of(result)) == content  # hosts that read only text see the same
    return content


def check_listed(tools: dict[str, Tool]) -> None:
    """Output schemas that are real objects; every parameter described; enums and bounds."""
    for name, tool in tools.items():
        schema = tool.output_schema
        assert schema is not None, name
        assert schema["type"] == "object", name
        assert set(schema["properties"]) != {"result"}, f"{name} still wraps a JSON string"
        for param, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{name}.{param} has no description"
    remember = tools["remember"].input_schema["properties"]
    kind = remember["kind"]
    patterns = [k["pattern"] for k in kind.get("anyOf", [kind]) if "pattern" in k]
    assert patterns == [KIND_RE.pattern]  # any kind the store takes, or left out (null)
    assert remember["new_kind"]["type"] == "boolean"
    kinds = tools["recall"].input_schema["properties"]["kinds"]
    assert [k["items"]["pattern"] for k in kinds["anyOf"] if "items" in k] == [KIND_RE.pattern]
    assert (remember["importance"]["minimum"], remember["importance"]["maximum"]) == (0, 1)
    recall = tools["recall"].input_schema["properties"]
    assert (recall["k"]["minimum"], recall["k"]["maximum"]) == (1, MAX_K)
    recent = tools["recent"].input_schema["properties"]
    assert (recent["limit"]["minimum"], recent["limit"]["maximum"]) == (1, MAX_RECENT)
    hit = tools["recall"].output_schema
    assert hit is not None
    assert {"written_by", "claimed_author", "provenance"} <= set(hit["$defs"]["Hit"]["properties"])
    remembered = tools["remember"].output_schema
    assert remembered is not None
    assert "stays_local" in remembered["properties"]


def test_tools_answer_typed_structured_content(server_home: Path) -> None:
    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            check_listed(tools)

            old = structured(
                tools["remember"],
                await client.call_tool("remember", {"content": "Deploys use the blue pool."}),
            )
            assert old["stays_local"] is None
            new = structured(
                tools["remember"],
                await client.call_tool(
                    "remember",
                    {
                        "content": "Deploys use the green pool since the move.",
                        "kind": " Decision",  # read as the lower-case kind
                        "keywords": ["deploy", "pool"],
                        "importance": 0.8,
                        "supersedes": [old["id"]],
                    },
                ),
            )
            assert (new["kind"], new["created"]) == ("decision", True)

            recalled = structured(
                tools["recall"], await client.call_tool("recall", {"query": "deploys pool"})
            )
            by_id = {h["id"]: h for h in recalled["hits"]}
            assert by_id[new["id"]]["supersedes"] == [old["id"]]
            assert by_id[new["id"]]["written_by"] == "you"
            assert by_id[new["id"]]["claimed_author"] == "you"
            assert [m["id"] for m in by_id[old["id"]]["superseded_by"]] == [new["id"]]
            only = structured(
                tools["recall"],
                await client.call_tool("recall", {"query": "deploys pool", "kinds": ["decision"]}),
            )
            assert [h["id"] for h in only["hits"]] == [new["id"]]

            got = structured(tools["get"], await client.call_tool("get", {"id": new["id"]}))
            assert got["memory"]["keywords"] == ["deploy", "pool"]
            recent = structured(tools["recent"], await client.call_tool("recent", {"limit": 1}))
            assert [m["id"] for m in recent["memories"]] == [new["id"]]
            status = structured(tools["status"], await client.call_tool("status", {}))
            assert status["stats"]["memories"] == 2
            assert status["sync"]["configured"] is False
            gone = structured(
                tools["forget"],
                await client.call_tool("forget", {"id": old["id"], "reason": "pool moved"}),
            )
            # stored by the agent, so private: forgotten at once, nothing held
            assert gone == {
                "forgotten": old["id"],
                "reason": "pool moved",
                "held_for_review": False,
            }

    run(session)


ARGUMENT_ERRORS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("recall", {"query": "x", "k": 0}, ["k=0", "from 1 to 100"]),
    ("recall", {"query": "x", "k": 1000}, ["k=1000", "from 1 to 100"]),
    ("recall", {"query": "x", "kinds": ["No Kind!"]}, ["kinds[0]='no kind!'", "a string matching"]),
    ("recall", {}, ["query is required"]),
    ("remember", {"content": "x", "kind": "Not A Kind!"}, ["kind=", "a string matching"]),
    ("remember", {"content": "x", "importance": 2}, ["importance=2", "from 0 to 1"]),
    ("remember", {"content": "x", "importance": "high"}, ["importance='high'", "a number"]),
    ("recent", {"limit": 0}, ["limit=0", f"from 1 to {MAX_RECENT}"]),
    ("forget", {"id": MISSING_ID}, ["reason is required"]),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    ARGUMENT_ERRORS,
    ids=[f"{tool}-{expected[0]}" for tool, _, expected in ARGUMENT_ERRORS],
)
def test_argument_errors_name_the_parameter_and_the_allowed_values(
    server_home: Path, tool: str, arguments: dict[str, Any], expected: list[str]
) -> None:
    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            result = await client.call_tool(tool, arguments)
            message = text_of(result)
            assert result.is_error
            assert message.startswith(f"{tool}: "), message
            for part in expected:
                assert part in message, message
            assert "pydantic" not in message
            assert "validation error" not in message
            assert "\n" not in message, message
            assert len(message) < 300, message

    run(session)


@pytest.mark.slow
@pytest.mark.skipif(not SEALMEM.exists(), reason="console script not installed")
def test_stdio_initialize_names_the_version_and_lists_schemas(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=str(SEALMEM), args=["mcp"], env={"SEALMEM_HOME": str(tmp_path / "home")}
    )
    errlog_path = tmp_path / "server-stderr.log"

    async def session() -> None:
        with anyio.fail_after(60), errlog_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                info = client.server_info
                assert info is not None
                assert (info.name, info.version) == ("sealmem", version("sealmem"))
                check_listed({t.name: t for t in (await client.list_tools()).tools})

    run(session)
    assert "Traceback" not in errlog_path.read_text()
