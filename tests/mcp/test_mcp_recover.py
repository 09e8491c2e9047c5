"""A store recovered in place while an MCP server (or any process) holds it open.

``sealmem recover`` renames the damaged file aside and puts the salvaged store at
its path.  Before, a running MCP server kept its connection to the renamed file
and went on writing there: every memory an agent remembered from then on was
lost (the new store never saw it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, TextContent

from sealmem.client import MemoryStore
from sealmem.client.paths import store_path
from sealmem.client.store.connection import DamagedStoreError, StoreReplacedError
from sealmem.client.store.recover import recover
from sealmem.protocol.errors import StoreError

SEALMEM = Path(sys.executable).with_name("sealmem")


def _text(result: CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def _contents(home: Path) -> set[str]:
    with MemoryStore.open(store_path(home)) as store:
        return {m.record.content for m in store.recent(limit=50, all_projects=True)}


@pytest.mark.slow
@pytest.mark.skipif(not SEALMEM.exists(), reason="console script not installed")
def test_an_mcp_server_writes_into_the_recovered_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "webshop"
    project.mkdir()
    env = {**os.environ, "SEALMEM_HOME": str(home)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SEALMEM), *args], capture_output=True, text=True, env=env, cwd=project,
            timeout=120, check=False,
        )  # fmt: skip

    assert cli("remember", "Written by the CLI before the recovery").returncode == 0
    params = StdioServerParameters(
        command=str(SEALMEM), args=["mcp"], env={"SEALMEM_HOME": str(home)}, cwd=project
    )
    errlog_path = tmp_path / "server-stderr.log"
    said: dict[str, CallToolResult] = {}

    async def session() -> None:
        with anyio.fail_after(120), errlog_path.open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                said["before"] = await client.call_tool(
                    "remember", {"content": "Remembered over MCP before the recovery"}
                )
                recovered = await anyio.to_thread.run_sync(lambda: cli("recover", "--json"))
                assert recovered.returncode == 0, recovered.stderr
                assert json.loads(recovered.stdout)["damaged_copy"]
                said["after"] = await client.call_tool(
                    "remember", {"content": "Remembered over MCP after the recovery"}
                )
                said["recall"] = await client.call_tool("recall", {"query": "recovery"})

    anyio.run(session)
    assert not said["before"].is_error, _text(said["before"])
    assert not said["after"].is_error, _text(said["after"])
    assert _contents(home) == {
        "Written by the CLI before the recovery",
        "Remembered over MCP before the recovery",
        "Remembered over MCP after the recovery",
    }
    recalled = json.loads(_text(said["recall"]))
    assert len(recalled["hits"]) == 3  # read from the new store too
    assert "Traceback" not in errlog_path.read_text()


def test_a_connection_to_the_replaced_file_refuses_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any long-lived process (``sync --watch``, a viewer's request in flight): its next
    write is refused by name, never written into the file renamed aside."""
    home = tmp_path / "home"
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    path = store_path(home)
    held = MemoryStore.open(path)
    try:
        held.remember("kept", project="webshop")
        result = recover(path, now_ms=1_800_000_000_000)
        assert result.damaged is not None
        with pytest.raises(StoreReplacedError, match="was replaced or moved") as caught:
            held.remember("would be lost", project="webshop")
        assert "sealmem recover" in str(caught.value)
        assert isinstance(caught.value, StoreError)
    finally:
        held.close()
    assert _contents(home) == {"kept"}
    with MemoryStore.open(result.damaged) as old:
        contents = {m.record.content for m in old.recent(limit=5, all_projects=True)}
    assert "would be lost" not in contents


def test_while_a_salvage_runs_other_writers_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The salvage marks the store first and takes its write lock once: a write that
    comes while it reads is refused (nothing is written into the file it copies)."""
    home = tmp_path / "home"
    monkeypatch.setenv("SEALMEM_HOME", str(home))
    path = store_path(home)
    writer = MemoryStore.open(path)
    refused: list[str] = []

    import sealmem.client.store.recover as salvage

    copy = salvage._copy

    def copy_while_another_writes(*args: object, **kw: object) -> None:
        try:
            writer.remember("written during the salvage", project="webshop")
        except DamagedStoreError as exc:
            refused.append(str(exc))
        copy(*args, **kw)  # type: ignore[arg-type]

    try:
        writer.remember("kept", project="webshop")
        monkeypatch.setattr(salvage, "_copy", copy_while_another_writes)
        recover(path, now_ms=1_800_000_000_000)
    finally:
        writer.close()
    assert len(refused) == 1
    assert "being salvaged by 'sealmem recover'" in refused[0]
    assert _contents(home) == {"kept"}
