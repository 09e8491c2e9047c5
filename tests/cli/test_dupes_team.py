"""The same lesson written by two teammates, over a real shared folder, each member with
their own SEALMEM_HOME: the reader's recall (CLI, MCP), list and viewer show it once,
led by the best-ranked version, with both writers named; a different memory on the same
subject stays apart."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.client.mcp.tools import MemoryTools
from sealmem.client.recall.api import MemoryStore
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import Secrets
from tests.support.cli import Run, in_process
from tests.sync.conftest import PROJECT, World, make_world

pytestmark = pytest.mark.slow

ALICE = "Redis 7 holds the session cookies; flushing it logs everyone out"
BOB = "Session cookies live in Redis 7, so a flush of Redis logs every user out"
OTHER = "Redis 7 also backs the rate limiter counters"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    made = make_world(tmp_path, "alice", "bob")
    made.nodes["alice"].remember(ALICE)
    made.nodes["bob"].remember(BOB)
    made.nodes["admin"].remember(OTHER)
    made.sync_all()
    yield made
    made.close()


@pytest.fixture
def reader(
    world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., Run]:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("SEALMEM_HOME", str(world.nodes["admin"].home))
    return in_process(capsys, monkeypatch)


def test_recall_and_list_show_a_teammates_repeat_once_with_both_writers(
    reader: Callable[..., Run],
) -> None:
    found = reader("recall", "redis session cookies", "-p", PROJECT, "--json").json()["hits"]
    assert len(found) == 2
    lesson, other = found
    assert {lesson["content"], *[d["content"] for d in lesson["duplicates"]]} == {ALICE, BOB}
    assert sorted(lesson["writers"]) == ["alice", "bob"]
    assert lesson["written_by"] == lesson["writers"][0]  # the best-ranked leads
    assert [d["writer_verified"] for d in lesson["duplicates"]] == [True]
    assert (other["content"], other["duplicates"], other["writers"]) == (OTHER, [], ["you"])

    text = reader("recall", "redis session cookies", "-p", PROJECT).out
    assert text.count("1. (") == 1
    assert "3. (" not in text
    second = "bob" if lesson["written_by"] == "alice" else "alice"
    assert f"also written by {second}: " in text

    listed = reader("list", "-p", PROJECT, "--json").json()["memories"]
    assert len(listed) == 2
    grouped = next(m for m in listed if m["duplicates"])
    assert sorted(grouped["writers"]) == ["alice", "bob"]
    table = reader("list", "-p", PROJECT).out
    assert len(table.splitlines()) == 3  # the header and two rows
    assert "(also written by " in table


def test_the_agent_gets_the_group_with_every_verified_writer(world: World) -> None:
    home = world.nodes["admin"].home
    tools = MemoryTools(lambda: MemoryStore.open(home / "store.db"), PROJECT)
    try:
        result = asyncio.run(tools.recall("redis session cookies", project=PROJECT))
    finally:
        tools.close()
    lesson = result.hits[0]
    assert {lesson.content, *[d.content for d in lesson.duplicates]} == {ALICE, BOB}
    assert sorted(lesson.writers) == ["alice", "bob"]
    assert [d.provenance.verified for d in lesson.duplicates] == [True]
    assert [h.content for h in result.hits[1:]] == [OTHER]


def test_the_viewer_shows_one_entry_with_both_writers(world: World) -> None:
    secrets = Secrets()
    app = create_app(world.nodes["admin"].home, secrets, allowed_hosts(8000), project=PROJECT)
    client = TestClient(app, base_url="http://127.0.0.1:8000", follow_redirects=False)
    assert client.get(f"/?token={secrets.token}").status_code == 200
    html = client.get("/", params={"q": "redis session cookies"}).text
    assert "2 results for" in html
    assert html.count('class="duplicates"') == 1
    assert "also written by alice:" in html or "also written by bob:" in html
    assert "by alice via folder (verified)" in html
    assert "by bob via folder (verified)" in html
    recent = client.get("/").text
    assert recent.count('class="duplicates"') == 1
