"""What a recall shows counts as recalled for staleness on every surface: the CLI, MCP,
the prompt hook (what it injects) and the viewer's search; the startup context does not
(:mod:`sealmem.client.store.freshness`).  A memory written 200 days ago, no one having
confirmed it, is stale; once a surface has shown it, it is no longer."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from sealmem.client.mcp.tools import MemoryTools
from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import Secrets
from tests.hosts.conftest import Env, Run

DAY = 86_400_000
TEXT = "The billing service listens on port 8080 behind the proxy."
QUERY = "which port does the billing service listen on?"


def _old_memory(env: Env, text: str = TEXT) -> str:
    old = time.time_ns() // 1_000_000 - 200 * DAY
    author = local_author(env.state)
    with MemoryStore.open(store_path(env.state), author=author, clock=lambda: old) as s:
        return s.remember(text, project="webshop").memory.id


def _stale(env: Env) -> list[str]:
    with MemoryStore.open(store_path(env.state), author=local_author(env.state)) as s:
        return [m.id for m, _ in s.stale(all_projects=True)]


@pytest.mark.slow
def test_the_prompt_hook_counts_what_it_injects(cli: Callable[..., Run], env: Env) -> None:
    memory_id = _old_memory(env)
    assert _stale(env) == [memory_id]
    stdin = json.dumps({"session_id": "s1", "cwd": str(env.project), "prompt": "hi there"})
    assert cli("hook", "session-start", stdin=stdin).code == 0  # not asked for: not counted
    assert _stale(env) == [memory_id]
    stdin = json.dumps({"session_id": "s1", "cwd": str(env.project), "prompt": QUERY})
    run = cli("hook", "prompt", stdin=stdin)
    assert run.code == 0
    assert "8080" in run.out
    assert _stale(env) == []


@pytest.mark.slow
def test_the_viewers_search_counts_what_it_shows(env: Env) -> None:
    memory_id = _old_memory(env)
    assert _stale(env) == [memory_id]
    secrets = Secrets()
    client = TestClient(
        create_app(env.state, secrets, allowed_hosts(8000), project="webshop"),
        base_url="http://127.0.0.1:8000",
        follow_redirects=False,
    )
    assert client.get(f"/?token={secrets.token}").status_code == 200
    assert _stale(env) == [memory_id]  # the recent list is no recall
    first = client.get("/", params={"q": "billing port"}).text
    assert '<p class="stale">' in first  # stale when shown, then noted
    assert _stale(env) == []
    assert '<p class="stale">' not in client.get("/", params={"q": "billing port"}).text


@pytest.mark.slow
def test_the_cli_and_mcp_count_what_they_show(cli: Callable[..., Run], env: Env) -> None:
    _old_memory(env)
    assert cli("recall", "billing port").code == 0
    assert _stale(env) == []
    other = _old_memory(env, "Invoices are rendered with the Inter font at 11 pt.")
    assert _stale(env) == [other]

    async def ask() -> None:
        tools = MemoryTools(lambda: MemoryStore.open(store_path(env.state)), "webshop")
        try:
            result = await tools.recall("invoice font", project="webshop")
            assert other in [h.id for h in result.hits]
            await asyncio.sleep(0.05)  # the note runs on the loop after the answer
        finally:
            tools.close()

    asyncio.run(ask())
    assert _stale(env) == []
