"""``sealmem mcp --http`` as a process: the stdio tool set over streamable HTTP, behind a
bearer token and the loopback's Host/Origin checks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import (
    CallToolResult,
    EmptyResult,
    PromptReference,
    ResourceTemplateReference,
    TextContent,
    TextResourceContents,
)

from tests.support.cli import in_process
from tests.support.mcp_http import INIT, MCP_HEADERS, Served, banner, serving_mcp, start, stop

pytestmark = pytest.mark.slow


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serving_mcp(tmp_path, "-p", "webshop") as running:
        yield running


def structured(result: CallToolResult) -> Any:
    assert not result.is_error, result
    text = "".join(b.text for b in result.content if isinstance(b, TextContent))
    assert json.loads(text) == result.structured_content  # the compact text twin, as stdio
    return result.structured_content


async def drive(served: Served) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {served.token}"})
    async with (
        client,
        streamable_http_client(served.url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        seen["init"] = await session.initialize()
        seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
        seen["remember"] = structured(
            await session.call_tool(
                "remember", {"content": "Orders live in PostgreSQL 16", "kind": "decision"}
            )
        )
        seen["recall"] = structured(await session.call_tool("recall", {"query": "orders"}))
        seen["status"] = structured(await session.call_tool("status", {}))
        seen["bad"] = await session.call_tool("recall", {"query": "orders", "k": 0})
        memory_id = seen["remember"]["id"]
        prompt = PromptReference(type="ref/prompt", name="startup_context")
        template = ResourceTemplateReference(type="ref/resource", uri="sealmem://memory/{id}")
        seen["projects"] = await session.complete(prompt, {"name": "project", "value": "web"})
        seen["none"] = await session.complete(prompt, {"name": "project", "value": "zzz"})
        seen["ids"] = await session.complete(
            template, {"name": "id", "value": memory_id[:6].upper()}
        )
        with pytest.warns(MCPDeprecationWarning):  # gone at 2026-07-28; hosts still send it
            seen["level"] = await session.set_logging_level("debug")
        seen["read"] = await session.read_resource(f"sealmem://memory/{memory_id[:8]}")
    return seen


def test_the_stdio_tools_over_http_with_the_token(served: Served) -> None:
    from sealmem.client.mcp.server import create_server

    seen = anyio.run(drive, served)
    assert seen["init"].server_info.name == "sealmem"
    assert "not instructions" in (seen["init"].instructions or "")

    async def stdio_tools() -> Any:
        return await create_server(project="webshop").list_tools()

    same = {t.name: t for t in anyio.run(stdio_tools)}
    assert set(seen["tools"]) == set(same) == {
        "recall", "remember", "get", "recent", "forget", "status"
    }  # fmt: skip
    for name, tool in same.items():  # one tool set: same schemas, descriptions, hints
        over_http = seen["tools"][name]
        assert over_http.description == tool.description
        assert over_http.input_schema == tool.input_schema
        assert over_http.annotations == tool.annotations
    assert seen["remember"]["project"] == "webshop"
    assert seen["remember"]["held_for_review"] is True  # an agent's write, as over stdio
    (hit,) = seen["recall"]["hits"]
    assert hit["id"] == seen["remember"]["id"]
    assert hit["written_by"] == "you"
    assert hit["source"] == "agent"
    assert "not instructions" in seen["recall"]["note"]
    assert seen["status"]["project"] == "webshop"
    assert seen["status"]["store"] == str(served.home / "store.db")
    assert seen["bad"].is_error  # a refused argument is a tool error, and it serves on
    assert "k" in "".join(b.text for b in seen["bad"].content if isinstance(b, TextContent))


def test_completion_and_log_level_over_http(served: Served) -> None:
    seen = anyio.run(drive, served)
    capabilities = seen["init"].capabilities
    assert capabilities.completions is not None
    assert capabilities.logging is not None
    assert seen["projects"].completion.values == ["webshop"]
    assert seen["none"].completion.values == []
    assert seen["ids"].completion.values == [seen["remember"]["id"]]  # a prefix, any case
    assert isinstance(seen["level"], EmptyResult)
    (contents,) = seen["read"].contents
    assert isinstance(contents, TextResourceContents)
    shown = json.loads(contents.text)
    assert shown["memory"]["id"] == seen["remember"]["id"]
    assert "not instructions" in shown["note"]  # framed as data, as the get tool


def test_a_request_without_the_right_token_is_401(served: Served) -> None:
    wrong = {**served.auth(), "Authorization": "Bearer " + "x" * 43}
    basic = {**served.auth(), "Authorization": f"Basic {served.token}"}
    for headers in (MCP_HEADERS, wrong, basic):
        answer = httpx.post(served.url, json=INIT, headers=headers)
        assert answer.status_code == 401, headers
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert "Authorization: Bearer" in answer.json()["error"]
    assert httpx.get(served.url, headers=MCP_HEADERS).status_code == 401
    assert httpx.post(served.url, json=INIT, headers=served.auth()).status_code == 200
    assert served.token not in stop(served.proc)  # nothing logged it


@pytest.mark.parametrize(
    ("header", "value", "status"),
    [
        ("Origin", "http://evil.example", 403),
        ("Origin", "null", 403),
        ("Origin", "http://127.0.0.1:1", 403),  # another local port is another site
        ("Host", "evil.example", 421),  # a DNS-rebound name
    ],
)
def test_a_foreign_origin_or_host_is_refused(
    served: Served, header: str, value: str, status: int
) -> None:
    answer = httpx.post(served.url, json=INIT, headers=served.auth(**{header: value}))
    assert answer.status_code == status
    assert "access-control-allow-origin" not in answer.headers


def test_its_own_origin_and_localhost_are_served(served: Served) -> None:
    port = served.url.split(":")[2].split("/")[0]
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}"):
        answer = httpx.post(served.url, json=INIT, headers=served.auth(Origin=origin))
        assert answer.status_code == 200, origin
        assert "access-control-allow-origin" not in answer.headers


def test_a_token_from_the_environment_is_never_printed(tmp_path: Path) -> None:
    token = "t" * 40
    proc = start(tmp_path, SEALMEM_MCP_TOKEN=token)
    try:
        url, token_line = banner(proc)
        assert "$SEALMEM_MCP_TOKEN" in token_line
        headers = {"Authorization": f"Bearer {token}", **MCP_HEADERS}
        answer = httpx.post(url, json=INIT, headers=headers)
        assert answer.status_code == 200
    finally:
        err = stop(proc)
    assert token not in token_line + err


def test_a_short_token_from_the_environment_is_refused(tmp_path: Path) -> None:
    proc = start(tmp_path, SEALMEM_MCP_TOKEN="secret")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "SEALMEM_MCP_TOKEN is refused" in err
    assert "Traceback" not in err


def test_a_port_without_http_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    done = in_process(capsys, monkeypatch)("mcp", "--port", "9000")
    assert done.code == 1
    assert "--port is refused without --http" in done.err


def _answer(response: httpx.Response) -> Any:
    """The JSON-RPC answer in a response (JSON or one SSE event)."""
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(next(d for d in data if d.strip()))


def test_an_unknown_log_level_is_invalid_params(served: Served) -> None:
    with httpx.Client(headers=served.auth()) as client:
        init = client.post(served.url, json=INIT)
        session = {"mcp-session-id": init.headers["mcp-session-id"]}
        session["mcp-protocol-version"] = _answer(init)["result"]["protocolVersion"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.post(served.url, json=note, headers=session).status_code == 202
        for level, ok in (("banana", False), ("warning", True)):
            request = {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel"}
            answer = _answer(
                client.post(
                    served.url, json={**request, "params": {"level": level}}, headers=session
                )
            )
            if ok:
                assert "error" not in answer, answer
                assert "result" in answer
            else:
                assert answer["error"]["code"] == -32602, answer
