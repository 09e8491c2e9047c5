"""Which session each write path records: the CLI's SEALMEM_SESSION and the helpers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.recall.ranking import is_session_origin
from sealmem.client.recall.sessions import cli_origin, host_origin, session_origin
from sealmem.protocol.errors import InputError
from sealmem.protocol.record import MAX_ORIGIN_CHARS
from tests.support.cli import Run, in_process


@pytest.fixture
def cli(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Run]:
    return in_process(capsys, monkeypatch)


def _origin(home: Path, run: Run) -> str:
    with MemoryStore.open(home / "store.db") as store:
        return store.get(run.json()["memory"]["id"]).record.origin


def test_the_cli_records_sealmem_session(
    home: Path, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEALMEM_SESSION", "ci-run-1842")
    run = cli("remember", "Orders live in PostgreSQL 16", "-p", "app", "--json")
    assert run.code == 0, run.err
    assert _origin(home, run) == "cli:ci-run-1842"


def test_the_cli_without_sealmem_session_records_the_bare_tool(
    home: Path, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEALMEM_SESSION", raising=False)
    run = cli("remember", "Orders live in PostgreSQL 16", "-p", "app", "--json")
    assert run.code == 0, run.err
    assert _origin(home, run) == "cli"


def test_a_bad_sealmem_session_is_refused_by_name(
    home: Path, cli: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEALMEM_SESSION", "two words")
    run = cli("remember", "Orders live in PostgreSQL 16", "-p", "app")
    assert run.code != 0
    assert "SEALMEM_SESSION" in run.err
    assert "Traceback" not in run.err


def test_session_origins_fit_the_record_and_name_a_session() -> None:
    longest = session_origin("claude-code", "a" * 48)
    assert len(longest) <= MAX_ORIGIN_CHARS
    assert is_session_origin(longest)
    with pytest.raises(InputError, match="session id"):
        session_origin("mcp", "a" * 49)


def test_a_host_session_id_is_never_refused() -> None:
    uuid = "0b6f1c2e-7d3a-4f5e-9a8b-1c2d3e4f5a6b"
    assert host_origin("claude-code", uuid) == f"claude-code:{uuid}"
    odd = host_origin("claude-code", "weird id/with slashes " * 5)
    assert odd == host_origin("claude-code", "weird id/with slashes " * 5)  # stable
    assert is_session_origin(odd)
    assert len(odd) <= MAX_ORIGIN_CHARS
    assert host_origin("claude-code", None) == "claude-code"
    assert host_origin("claude-code", "  ") == "claude-code"


def test_cli_origin_reads_the_environment_given() -> None:
    assert cli_origin({}) == "cli"
    assert cli_origin({"SEALMEM_SESSION": " tmux-3 "}) == "cli:tmux-3"
