"""Text with no UTF-8 form is refused by name on every local write path.

A lone surrogate (U+D800..U+DFFF) is what Python makes of argv bytes that are not
UTF-8 (``sealmem remember note -k $'k\\xff'``), and what a JSON ``"\\udcff"`` escape
from an MCP client decodes to.  SQLite cannot store it: the write ended in a
``UnicodeEncodeError`` traceback (the CLI) or an unnamed tool failure (MCP).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp.client.client import Client
from mcp_types import TextContent

from sealmem.client import MemoryStore
from sealmem.client.mcp.server import create_server
from sealmem.protocol.errors import InputError
from tests.support.cli import Run, in_process

from .conftest import OpenStore

BAD = "caf\udce9 au lait"  # the latin-1 byte 0xE9, kept as a surrogate escape


def count(store: MemoryStore) -> int:
    return int(store.connection.execute("SELECT count(*) FROM memories").fetchone()[0])


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"content": BAD}, "memory text is not UTF-8 text: character 4"),
        ({"content": "a note", "keywords": ["ok", BAD]}, "keyword number 2 is not UTF-8"),
        ({"content": "a note", "origin": BAD}, "origin is not UTF-8"),
    ],
)
def test_remember_refuses_a_lone_surrogate_by_name(
    store: MemoryStore, arguments: dict[str, object], named: str
) -> None:
    with pytest.raises(InputError, match=named) as refused:
        store.remember(**arguments)  # type: ignore[arg-type]
    assert "U+DCE9" in str(refused.value)
    assert "nothing was stored" in str(refused.value)
    assert count(store) == 0


def test_forget_refuses_a_reason_with_a_lone_surrogate(store: MemoryStore) -> None:
    memory = store.remember("a note to forget").memory
    with pytest.raises(InputError, match="reason is not UTF-8"):
        store.forget(memory.id, reason=BAD)
    assert not store.get(memory.id).record.deleted


def test_python_callers_get_an_input_error_for_a_wrong_type(store: MemoryStore) -> None:
    with pytest.raises(InputError, match="keywords 5 must be a list"):
        store.remember("a note", keywords=5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="project 5 is not a name"):
        store.remember("a note", project=5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="supersedes 5 must be a list"):
        store.remember("a note", supersedes=5)  # type: ignore[arg-type]
    assert count(store) == 0
    with pytest.raises(InputError, match="k=5 must be between 1 and"):
        store.recall("a note", k="5")  # type: ignore[arg-type]
    for wrong in ("5", 0, 101, True):  # it failed with a TypeError, or gave no related result
        with pytest.raises(InputError, match=f"related_within={wrong} must be between 1 and"):
            store.recall("a note", k=5, related_within=wrong)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="limit 5 must be between 1 and"):
        store.recent(limit="5")  # type: ignore[arg-type]


def test_the_cli_says_which_keyword_is_not_utf8(
    home: object, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cli: Callable[..., Run] = in_process(capsys, monkeypatch)
    run = cli("remember", "a plain note", "-k", "ok", "-k", BAD)
    assert run.code != 0
    assert "Traceback" not in run.err
    assert "keyword number 2 is not UTF-8 text" in run.err


def test_the_mcp_tool_names_the_refusal(home: object) -> None:
    async def session() -> None:
        async with Client(create_server(project="webshop")) as client:
            result = await client.call_tool("remember", {"content": BAD})
            assert result.is_error
            text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
            assert "not UTF-8 text" in text, text

    anyio.run(session)


def _export_with(store: MemoryStore, text: str) -> str:
    """An export whose memory text is ``text``, spelled as JSON spells it (``\\udce9``)."""
    store.remember("a plain note to export", keywords=["k"])
    spelled = json.dumps(text)[1:-1]
    return json.dumps(store.export()).replace("a plain note to export", spelled)


def test_an_import_with_a_lone_surrogate_is_refused_by_name(
    store: MemoryStore, open_store: OpenStore, home: Path
) -> None:
    """An export file can spell any code point (``"\\udce9"``); the store cannot hold one."""
    document = _export_with(store, BAD)
    other = open_store(home / "other.db")
    with pytest.raises(InputError, match="lone surrogate U\\+DCE9"):
        other.import_(json.loads(document))
    with pytest.raises(InputError, match="nothing was stored"):
        other.import_stream(io.StringIO(document))
    assert count(other) == 0


def test_the_cli_import_says_so_without_a_traceback(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with MemoryStore.open(tmp_path / "source.db", author="me") as source:
        document = _export_with(source, BAD)
    export = tmp_path / "export.json"
    export.write_text(document, encoding="utf-8")
    cli: Callable[..., Run] = in_process(capsys, monkeypatch)
    run = cli("import", str(export))
    assert run.code != 0
    assert "Traceback" not in run.err
    assert "lone surrogate" in run.err
