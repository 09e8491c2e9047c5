"""Add, replace and remove one server entry in a TOML config (Codex's ``config.toml``).

The file is edited through ``tomlkit``, which keeps every comment and every
byte of layout it is not asked to change, whichever way the user wrote the
servers table: ``[mcp_servers.x]`` tables, a ``[mcp_servers]`` table, an
inline ``mcp_servers = { ... }`` or dotted keys (``mcp_servers.x.command``).

- A new entry goes into an inline servers table when the user wrote one (a
  header cannot extend an inline table); otherwise it is appended at the end of
  the file as its own ``[mcp_servers.sealmem]`` table, after one blank line.
- An existing entry is updated where it is, keeping its style; when ``tomlkit``
  cannot do that faithfully (dotted keys), it is removed and appended anew.
- Removing an entry takes back the blank line the append put before it, and the
  servers table too when nothing else was in it and the user never wrote it
  (``[mcp_servers]`` or ``mcp_servers = {}`` written by hand stay).

Every result is read back with ``tomllib`` and must equal the document asked
for, else the edit is refused (:class:`TomlConfigError`) and nothing is written.
Only a file that is not valid TOML is refused up front, naming the line.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Item, Table

from ...protocol.errors import InputError

__all__ = [
    "TomlConfigError",
    "parse_config",
    "remove_entry",
    "render_table",
    "servers_table",
    "set_entry",
]


class TomlConfigError(InputError):
    """A TOML config is not valid TOML, or an edit of it would not read back as asked."""


def parse_config(text: str, *, where: str) -> dict[str, Any]:
    """The document as plain values; invalid TOML is refused with the parse error's line."""
    try:
        doc = tomllib.loads(text)
        tomlkit.parse(text)
    except (tomllib.TOMLDecodeError, TOMLKitError) as exc:
        raise TomlConfigError(f"{where} is not valid TOML: {exc}") from exc
    return doc


def _inline(value: object) -> str:
    if isinstance(value, Mapping):
        pairs = [f"{tomlkit.key(str(k)).as_string()} = {_inline(v)}" for k, v in value.items()]
        return "{ " + ", ".join(pairs) + " }" if pairs else "{}"
    return tomlkit.item(value).as_string()


def _inline_item(value: Mapping[str, Any]) -> Item:
    item = tomlkit.parse("v = " + _inline(value)).item("v")
    if not isinstance(item, InlineTable):
        raise TypeError(f"{value!r} does not render as an inline table")
    return item


def render_table(table_path: Sequence[str], entry: Mapping[str, Any]) -> str:
    """``[a.b]`` followed by one ``key = value`` line per field (mappings inline)."""
    header = ".".join(tomlkit.key(part).as_string() for part in table_path)
    lines = [
        f"[{header}]",
        *(f"{tomlkit.key(k).as_string()} = {_inline(v)}" for k, v in entry.items()),
    ]
    return "\n".join(lines) + "\n"


def servers_table(doc: Mapping[str, Any], table: str, where: str) -> dict[str, Any]:
    """The servers table ``table`` of ``doc``; :class:`TomlConfigError` (with the fix) if
    it is not a table."""
    servers = doc.get(table, {})
    if not isinstance(servers, dict):
        raise TomlConfigError(
            f"{where}: '{table}' is a {type(servers).__name__}, not a table of servers; "
            f"make it a table ([{table}.NAME] sections)"
        )
    return servers


def _append(text: str, block: str) -> str:
    if not text:
        return block
    return text + ("\n" if text.endswith("\n") else "\n\n") + block


def _reads_back(text: str, expected: Mapping[str, Any]) -> bool:
    try:
        return tomllib.loads(text) == expected
    except tomllib.TOMLDecodeError:
        return False


def _update(table: Table, entry: Mapping[str, Any]) -> None:
    """Set ``table``'s keys to ``entry``'s values, sub-tables updated where they are."""
    for key in [k for k in table if k not in entry]:
        del table[key]
    for key, value in entry.items():
        current = table.get(key)
        if isinstance(value, Mapping) and type(current) is Table:
            _update(current, value)
        elif table.get(key) != value:
            table[key] = _inline_item(value) if isinstance(value, Mapping) else value


def _update_in_place(text: str, table: str, name: str, entry: Mapping[str, Any]) -> str | None:
    """``text`` with the entry's fields replaced where they are, or None if tomlkit cannot."""
    try:
        doc = tomlkit.parse(text)
        servers = doc[table]
        if isinstance(servers, InlineTable) or isinstance(servers[name], InlineTable):
            servers[name] = _inline_item(entry)
            return doc.as_string()
        current = servers[name]
        if type(current) is not Table:  # dotted keys spread over the file
            return None
        _update(current, entry)
        return doc.as_string()
    except (TOMLKitError, KeyError, ValueError, TypeError):
        return None


def set_entry(text: str, table: str, name: str, entry: Mapping[str, Any], *, where: str) -> str:
    """``text`` with ``[table.name]`` set to ``entry``, everything else byte for byte."""
    plain = parse_config(text, where=where)
    servers = servers_table(plain, table, where)
    expected = {**plain, table: {**servers, name: dict(entry)}}
    candidates: list[str | None] = []
    if name in servers:
        candidates.append(_update_in_place(text, table, name, entry))
        removed = remove_entry(text, table, name, where=where)
        if removed is not None:
            candidates.append(_append(removed, render_table((table, name), entry)))
    elif isinstance(tomlkit.parse(text).get(table), InlineTable):
        doc = tomlkit.parse(text)
        doc[table][name] = _inline_item(entry)
        candidates.append(doc.as_string())
    else:
        candidates.append(_append(text, render_table((table, name), entry)))
    for candidate in candidates:
        if candidate is not None and _reads_back(candidate, expected):
            return candidate
    raise TomlConfigError(f"{where}: the '{table}.{name}' entry cannot be written in place")


def _tail(table: Table) -> str:
    """Comments and blank lines after a table's last key, which belong to what follows."""
    items: list[str] = []
    for key, item in reversed(table.value.body):
        if key is None:
            items.append(item.as_string())
            continue
        if type(item) is Table:
            items.append(_tail(item))
        break
    return "".join(reversed(items))


def _table_place(text: str, doc: Any, item: Any) -> tuple[int, str] | None:
    """Where a ``[header]`` table starts in ``text``, and its trailing comments."""
    if type(item) is not Table:
        return None
    mark, indent = "\x00", item.trivia.indent
    item.trivia.indent = mark + indent
    marked = doc.as_string()
    item.trivia.indent = indent
    if marked.count(mark) != 1 or marked.replace(mark, "") != text:
        return None
    return marked.index(mark), _tail(item)


def remove_entry(text: str, table: str, name: str, *, where: str) -> str | None:
    """``text`` without ``[table.name]``, or None when there is no such entry."""
    plain = parse_config(text, where=where)
    servers = servers_table(plain, table, where)
    if name not in servers:
        return None
    rest = {k: v for k, v in servers.items() if k != name}
    doc = tomlkit.parse(text)
    container = doc[table]
    expected = {**plain, table: rest}
    try:
        place = _table_place(text, doc, container[name])
        del container[name]
        explicit = isinstance(container, InlineTable) or (
            isinstance(container, Table) and not container.is_super_table()
        )
        if not rest and not explicit:
            del doc[table]
            del expected[table]
    except (TOMLKitError, KeyError, ValueError, TypeError) as exc:
        raise TomlConfigError(f"{where}: cannot remove '{table}.{name}' ({exc})") from exc
    after = doc.as_string()
    if place is not None:  # give back the comments tomlkit filed under our table
        start, tail = place
        rest_of_file = after[start:]
        if text.startswith(after[:start]) and text.endswith(rest_of_file):
            cut = text[start : len(text) - len(rest_of_file)]
            if cut.endswith(tail):
                after = after[:start] + tail + rest_of_file
    if text.startswith(after) and after.endswith("\n\n"):
        after = after[:-1]  # the blank line the append put before the table
    if not _reads_back(after, expected):
        raise TomlConfigError(
            f"{where}: removing '{table}.{name}' would change other settings; "
            f"delete the [{table}.{name}] entry by hand"
        )
    return after
