"""The text-splicing editors: adding then removing gives back the exact bytes."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.client.hosts import jsonedit, tomledit

ENTRY = {"command": "/opt/sealmem/bin/sealmem", "args": ["mcp"], "env": {"SEALMEM_HOME": "/s"}}

keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
documents = st.dictionaries(keys, values, max_size=5)
styles = st.sampled_from([None, 2, 4, "\t"])


def _dump(doc: dict[str, Any], indent: int | str | None) -> str:
    if indent is None:
        return json.dumps(doc, separators=(",", ":"))
    return json.dumps(doc, indent=indent) + "\n"


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(documents, st.dictionaries(keys, values, max_size=3), styles)
def test_add_then_remove_server_is_identity(
    doc: dict[str, Any], servers: dict[str, Any], indent: int | str | None
) -> None:
    servers.pop("sealmem", None)
    doc = (
        {**doc, "mcpServers": servers}
        if servers
        else {k: v for k, v in doc.items() if k != "mcpServers"}
    )
    text = _dump(doc, indent)
    added = jsonedit.add_member(text, ["mcpServers"], "sealmem", ENTRY)
    parsed = json.loads(added)
    assert parsed["mcpServers"]["sealmem"] == ENTRY
    del parsed["mcpServers"]["sealmem"]
    if not servers:
        del parsed["mcpServers"]
    assert parsed == doc
    assert jsonedit.remove(added, ["mcpServers", "sealmem"], prune=not servers) == text


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(documents, st.lists(values, max_size=3), styles)
def test_append_then_remove_element_is_identity(
    doc: dict[str, Any], existing: list[Any], indent: int | str | None
) -> None:
    doc = (
        {**doc, "hooks": {"Stop": existing}}
        if existing
        else {k: v for k, v in doc.items() if k != "hooks"}
    )
    text = _dump(doc, indent)
    added = jsonedit.append_element(text, ["hooks", "Stop"], {"hooks": [1]})
    assert json.loads(added)["hooks"]["Stop"][-1] == {"hooks": [1]}
    index = len(existing)
    assert jsonedit.remove(added, ["hooks", "Stop", index], prune=not existing) == text


def test_replace_value_keeps_neighbours() -> None:
    text = (
        '{\n  "a": [1, 2],\n  "mcpServers": {\n    "sealmem": {"command": "/old"},\n'
        '    "z": 1\n  }\n}\n'
    )
    out = jsonedit.replace_value(text, ["mcpServers", "sealmem"], {"command": "/new"})
    assert out.startswith('{\n  "a": [1, 2],\n  "mcpServers": {\n    "sealmem": {\n')
    assert out.endswith('},\n    "z": 1\n  }\n}\n')
    assert json.loads(out)["mcpServers"] == {"sealmem": {"command": "/new"}, "z": 1}


def test_shape_errors_are_refused() -> None:
    with pytest.raises(jsonedit.JsonConfigError, match="not valid JSON"):
        jsonedit.parse_object("{", where="x.json")
    with pytest.raises(jsonedit.JsonConfigError, match="JSON object"):
        jsonedit.parse_object("[]", where="x.json")
    with pytest.raises(jsonedit.JsonConfigError, match="expected an object"):
        jsonedit.add_member('{"mcpServers": [1]}', ["mcpServers"], "sealmem", {})


toml_prefixes = st.sampled_from(
    ["", "a = 1", "a = 1\n", "a = 1\n\n", "# c\n[p]\nq = 'x'  # why\n\n# next\n"]
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(toml_prefixes, st.text(st.characters(codec="utf-8", exclude_categories=["Cs"])))
def test_toml_entry_round_trip(prefix: str, value: str) -> None:
    entry = {"command": value, "args": ["mcp", value], "env": {"SEALMEM_HOME": value}}
    block = tomledit.render_table(("mcp_servers", "sealmem"), entry)
    assert tomllib.loads(block)["mcp_servers"]["sealmem"] == entry
    added = tomledit.set_entry(prefix, "mcp_servers", "sealmem", entry, where="c.toml")
    assert added.startswith(prefix)
    assert tomllib.loads(added)["mcp_servers"]["sealmem"] == entry
    removed = tomledit.remove_entry(added, "mcp_servers", "sealmem", where="c.toml")
    assert removed == (prefix if prefix.endswith("\n") or not prefix else prefix + "\n")
    assert tomledit.remove_entry(prefix, "mcp_servers", "sealmem", where="c.toml") is None


def test_codex_entry_keeps_comments_and_layout() -> None:
    text = '# mine\nmodel = "x"  # why\n\n[mcp_servers.docs]\ncommand = "npx"\n'
    added = tomledit.set_entry(text, "mcp_servers", "sealmem", ENTRY, where="c.toml")
    assert added.startswith(text)
    doc = tomllib.loads(added)
    assert set(doc["mcp_servers"]) == {"docs", "sealmem"}
    assert tomledit.remove_entry(added, "mcp_servers", "sealmem", where="c.toml") == text


def test_removing_a_hand_written_table_keeps_the_comment_of_the_next_one() -> None:
    text = '[mcp_servers.sealmem]\ncommand = "x"\n\n# fast profile\n[profiles.fast]\nq = 1\n'
    after = tomledit.remove_entry(text, "mcp_servers", "sealmem", where="c.toml")
    assert after == "\n# fast profile\n[profiles.fast]\nq = 1\n"
