"""An agent's MCP ``forget`` of a memory shared with the team waits for a person, like an
agent's writes (``sealmem captured``): an agent cannot erase team memory alone.  A
private memory (no teammate holds it), the ``share`` choice, and a person's own
``sealmem forget`` act at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp_types import TextContent

from sealmem.client import MemoryStore
from sealmem.client.mcp.server import create_server
from tests.support.cli import Run, in_process

Cli = Callable[..., Run]
WARNING = "Never deploy on Fridays: the on-call rota is empty at weekends."

pytestmark = pytest.mark.slow  # MCP sessions: > 0.2 s


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    monkeypatch.setenv("SEALMEM_HOME", str(tmp_path / "home"))
    (tmp_path / "webshop").mkdir()
    monkeypatch.chdir(tmp_path / "webshop")
    return in_process(capsys, monkeypatch)


def _agent_forgets(memory_id: str, reason: str = "the rota is staffed now") -> Any:
    answers: list[Any] = []

    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            result = await client.call_tool("forget", {"id": memory_id, "reason": reason})
            text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
            assert not result.is_error, text
            answers.append(result.structured_content)

    anyio.run(session)
    return answers[0]


def _remembered(cli: Cli, *extra: str) -> str:
    done = cli("remember", WARNING, "--kind", "warning", *extra, "--json")
    assert done.code == 0, done.err
    return str(done.json()["memory"]["id"])


def _deleted(memory_id: str) -> bool:
    with MemoryStore.open() as store:
        return store.get(memory_id).deleted


def test_an_agents_forget_of_a_shared_memory_waits_for_a_person(cli: Cli) -> None:
    memory_id = _remembered(cli)
    answer = _agent_forgets(memory_id)
    assert (answer["forgotten"], answer["held_for_review"]) == (memory_id, True)
    assert not _deleted(memory_id)  # nothing erased, nothing to publish
    assert WARNING in cli("list").out
    (asked,) = cli("captured", "--json").json()["forgets"]
    assert (asked["id"], asked["reason"]) == (memory_id, "the rota is staffed now")
    assert asked["asked_by"].startswith("mcp:")
    listed = cli("captured").out
    assert "an agent asks to forget" in listed
    assert "the rota is staffed now" in listed

    kept = cli("captured", "discard", memory_id)
    assert kept.code == 0, kept.err
    assert "kept" in kept.out
    assert not _deleted(memory_id)
    assert cli("captured", "--json").json()["forgets"] == []

    _agent_forgets(memory_id)
    assert cli("captured", "accept", "--all").code == 0  # --all is the captures': not this
    assert not _deleted(memory_id)
    done = cli("captured", "accept", memory_id[-12:])
    assert done.code == 0, done.err
    assert "forgotten: the rota is staffed now" in done.out
    assert _deleted(memory_id)
    assert cli("captured", "--json").json()["forgets"] == []


def test_private_memories_and_the_share_choice_forget_at_once(cli: Cli) -> None:
    private = _remembered(cli, "--private")
    assert _agent_forgets(private)["held_for_review"] is False
    assert _deleted(private)
    assert cli("captured", "agent-writes", "share").code == 0
    shared = _remembered(cli)
    assert _agent_forgets(shared)["held_for_review"] is False
    assert _deleted(shared)


def test_a_persons_forget_is_immediate(cli: Cli) -> None:
    memory_id = _remembered(cli)
    assert cli("forget", memory_id, "--reason", "obsolete").code == 0
    assert _deleted(memory_id)


def test_a_held_forget_is_not_accepted_once_the_memory_changed(cli: Cli) -> None:
    memory_id = _remembered(cli)
    _agent_forgets(memory_id)
    changed = cli("remember", WARNING, "--keyword", "oncall", "--json")  # a new version
    assert changed.code == 0, changed.err
    refused = cli("captured", "accept", memory_id)
    assert refused.code != 0
    assert "changed since an agent asked to forget it" in refused.err
    assert "Traceback" not in refused.err
    assert not _deleted(memory_id)  # the agent's word does not erase what came since
    assert [f["id"] for f in cli("captured", "--json").json()["forgets"]] == [memory_id]
    assert cli("captured", "discard", memory_id).code == 0
    assert cli("captured", "--json").json()["forgets"] == []
    assert not _deleted(memory_id)


def test_a_held_forgets_reason_is_redacted_before_it_is_kept(cli: Cli, tmp_path: Path) -> None:
    """A reason is stored text like any other: a secret in it never reaches the store,
    the agent's answer, the captured list or the tombstone a person's accept writes."""
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    memory_id = _remembered(cli)
    answer = _agent_forgets(memory_id, reason=f"rotated the CI token {token}")
    assert answer["held_for_review"] is True
    assert token not in answer["reason"]
    assert "rotated the CI token" in answer["reason"]
    (asked,) = cli("captured", "--json").json()["forgets"]
    assert token not in asked["reason"]
    assert token not in cli("captured").out
    store_file = tmp_path / "home" / "store.db"
    held = b"".join(p.read_bytes() for p in store_file.parent.glob("store.db*"))
    assert token.encode() not in held
    done = cli("captured", "accept", memory_id)
    assert done.code == 0, done.err
    assert token not in done.out
    with MemoryStore.open() as store:
        reason = store.get(memory_id).record.delete_reason
    assert reason is not None
    assert token not in reason
    assert "rotated the CI token" in reason


def test_an_agents_forget_reason_prints_on_one_line_when_accepted(cli: Cli) -> None:
    """The reason is the agent's text: a newline in it cannot print a line of its own
    that reads as another outcome ("accepted from alice")."""
    memory_id = _remembered(cli)
    forged = "0123456789ab  accepted from alice"
    _agent_forgets(memory_id, f"stale\n{forged}")
    done = cli("captured", "accept", memory_id)
    assert done.code == 0, done.err
    assert forged not in done.out.splitlines()
    assert f"forgotten: stale\\n{forged}" in done.out
