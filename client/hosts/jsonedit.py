"""Minimal textual edits of a JSON document: the bytes we do not touch stay identical.

Host configs such as ``~/.claude.json`` are large files that the host itself
rewrites.  Re-serialising them to add one entry would reorder, re-indent or
re-escape everything else, so instead we locate the span of the one container
we change (with the stdlib scanner, on text already validated by ``json.loads``)
and splice text in or out.  Adding a member as the last one of a container and
removing it again is an exact inverse, so install followed by uninstall gives
back the original bytes.

Paths are sequences of object keys and array indexes from the root object.

JSONC (JSON with ``//`` and ``/* */`` comments and trailing commas, as VS Code's
``mcp.json`` and Zed's ``settings.json`` allow) is edited the same way: positions
are found in a copy where comments and trailing commas are blanked to spaces
(:func:`blank_jsonc`, same length, same line breaks), and the splices are made
in the original text, so the user's comments stay where they were.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...protocol.errors import InputError

__all__ = [
    "JsonConfigError",
    "add_member",
    "append_element",
    "blank_jsonc",
    "loads",
    "parse_object",
    "remove",
    "replace_value",
]

PathPart = str | int

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_INDENT = re.compile(r"\n([ \t]+)\S")
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
# Group 1: a run of text to keep (strings whole, so a "//" in one is no comment); else
# a comment or a trailing comma, to blank.  Runs are long: few matches, fast on big files.
_JSONC_TOKENS = re.compile(
    r'((?:[^"/,]+|' + _STRING + r"|/(?![/*])|,(?!\s*[}\]]))+)"
    r"|//[^\n]*|/\*.*?(?:\*/|\Z)|,",
    re.DOTALL,
)
_MAYBE_JSONC = re.compile(r"//|/\*|,\s*[}\]]")


class JsonConfigError(InputError):
    """A JSON config file cannot be parsed, or its shape is not what the host documents."""


@dataclass(frozen=True, slots=True)
class _Item:
    key: str | None  # None for array elements
    start: int  # first character of the key (object) or value (array)
    value_start: int
    value_end: int


def _blank(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return match.group(1)
    return re.sub(r"[^\n]", " ", match.group(0))


@functools.lru_cache(maxsize=8)  # one edit scans the same text several times
def blank_jsonc(text: str) -> str:
    """``text`` with comments and trailing commas replaced by spaces (line breaks kept),
    so every other character keeps its position; plain JSON comes back unchanged."""
    if not _MAYBE_JSONC.search(text):
        return text  # no comment opener and no trailing comma anywhere: plain JSON
    return _JSONC_TOKENS.sub(_blank, text)


def loads(text: str) -> Any:
    """``json.loads`` that also reads JSONC (see :func:`blank_jsonc`)."""
    return json.loads(blank_jsonc(text))


def parse_object(text: str, *, where: str, jsonc: bool = False) -> dict[str, Any]:
    """Parse ``text`` as a JSON object or raise :class:`JsonConfigError` naming ``where``.

    With ``jsonc``, comments and trailing commas are accepted (the host reads JSONC)."""
    try:
        value = json.loads(blank_jsonc(text) if jsonc else text)
    except json.JSONDecodeError as exc:
        raise JsonConfigError(
            f"{where} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from exc
    except (ValueError, RecursionError) as exc:  # a 4300-digit integer; arrays nested deep
        raise JsonConfigError(f"{where} cannot be read as JSON here ({exc})") from exc
    if not isinstance(value, dict):
        raise JsonConfigError(f"{where} must hold a JSON object at the top level")
    return value


def _skip(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _items(text: str, open_pos: int) -> tuple[list[_Item], int]:
    """The members of the container opening at ``open_pos``, and its closing position."""
    is_object = text[open_pos] == "{"
    closer = "}" if is_object else "]"
    i = _skip(text, open_pos + 1)
    items: list[_Item] = []
    if text[i] == closer:
        return items, i
    while True:
        start, key = i, None
        if is_object:
            key, i = _DECODER.raw_decode(text, i)
            i = _skip(text, _skip(text, i) + 1)  # past ':'
        _, end = _DECODER.raw_decode(text, i)
        items.append(_Item(key, start, i, end))
        i = _skip(text, end)
        if text[i] == ",":
            i = _skip(text, i + 1)
            continue
        return items, i


def _find(items: list[_Item], part: PathPart) -> int | None:
    if isinstance(part, int):
        return part if 0 <= part < len(items) else None
    found = None
    for index, item in enumerate(items):  # the last duplicate wins, as in json.loads
        if item.key == part:
            found = index
    return found


def _locate(text: str, path: Sequence[PathPart]) -> tuple[int, int]:
    """Open position of the deepest existing container along ``path``, and how many of
    the path's parts exist (``text`` may be JSONC)."""
    text = blank_jsonc(text)
    pos, done = _skip(text, 0), 0
    for part in path:
        items, _ = _items(text, pos)
        index = _find(items, part)
        if index is None:
            break
        value_start = items[index].value_start
        if text[value_start] not in "{[":
            raise JsonConfigError(
                f"expected an object or array at {'.'.join(map(str, path))!r}, "
                f"found {text[value_start : value_start + 20]!r}"
            )
        pos, done = value_start, done + 1
    return pos, done


def _pretty(text: str) -> bool:
    return "\n" in text.strip()


def _unit(text: str) -> str:
    match = _INDENT.search(text)
    return match.group(1) if match else "  "


def _line_indent(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    prefix = text[line_start:pos]
    return prefix[: len(prefix) - len(prefix.lstrip(" \t"))]


def _dump(text: str, value: Any, indent: str) -> str:
    if not _pretty(text):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=_unit(text)).replace("\n", "\n" + indent)


def _insert(text: str, open_pos: int, key: str | None, value: Any) -> str:
    """Add ``value`` (under ``key`` for an object) as the last item of a container."""
    items, close_pos = _items(blank_jsonc(text), open_pos)
    pretty = _pretty(text)
    if items and "\n" in text[open_pos : items[0].start]:
        indent = _line_indent(text, items[0].start)
    else:
        indent = _line_indent(text, open_pos) + _unit(text)
    dumped = _dump(text, value, indent)
    if key is not None:
        dumped = json.dumps(key, ensure_ascii=False) + (": " if pretty else ":") + dumped
    if items:
        at = items[-1].value_end
        glue = ",\n" + indent if pretty else ","
        return text[:at] + glue + dumped + text[at:]
    inner = "\n" + indent + dumped + "\n" + _line_indent(text, open_pos) if pretty else dumped
    return text[: open_pos + 1] + inner + text[close_pos:]


def _nest(path: Sequence[PathPart], leaf: Any) -> Any:
    value = leaf
    for part in reversed(path):
        value = {part: value}
    return value


def add_member(text: str, path: Sequence[str], key: str, value: Any) -> str:
    """Add ``key: value`` to the object at ``path``, creating missing objects on the way."""
    pos, done = _locate(text, path)
    if text[pos] != "{":
        raise JsonConfigError(f"expected an object at {'.'.join(path)!r}")
    if done == len(path):
        items, _ = _items(blank_jsonc(text), pos)
        if _find(items, key) is not None:
            raise JsonConfigError(f"{'.'.join([*path, key])!r} already exists")
        return _insert(text, pos, key, value)
    missing = path[done:]
    return _insert(text, pos, missing[0], _nest(missing[1:], {key: value}))


def append_element(text: str, path: Sequence[str], value: Any) -> str:
    """Append ``value`` to the array at ``path``, creating the array and its parents."""
    pos, done = _locate(text, path)
    if done == len(path):
        if text[pos] != "[":
            raise JsonConfigError(f"expected an array at {'.'.join(path)!r}")
        return _insert(text, pos, None, value)
    missing = path[done:]
    return _insert(text, pos, missing[0], _nest(missing[1:], [value]))


def _item_at(text: str, path: Sequence[PathPart]) -> tuple[int, list[_Item], int]:
    if not path:
        raise JsonConfigError("the root of a config cannot be replaced or removed")
    pos, done = _locate(text, path[:-1])
    if done != len(path) - 1:
        raise JsonConfigError(f"{'.'.join(map(str, path))!r} does not exist")
    items, _ = _items(blank_jsonc(text), pos)
    index = _find(items, path[-1])
    if index is None:
        raise JsonConfigError(f"{'.'.join(map(str, path))!r} does not exist")
    return pos, items, index


def replace_value(text: str, path: Sequence[PathPart], value: Any) -> str:
    """Replace the value at ``path`` in place (its key and neighbours keep their bytes)."""
    _, items, index = _item_at(text, path)
    item = items[index]
    dumped = _dump(text, value, _line_indent(text, item.start))
    return text[: item.value_start] + dumped + text[item.value_end :]


def remove(text: str, path: Sequence[PathPart], *, prune: bool = True) -> str:
    """Remove the member or element at ``path``.

    With ``prune``, a container left empty by the removal is removed from its
    parent in turn (never the root): an empty ``mcpServers`` means nothing to a
    host, and this makes removal the exact inverse of :func:`add_member` when
    that call created the container.
    """
    pos, items, index = _item_at(text, path)
    if len(items) == 1:
        _, close_pos = _items(blank_jsonc(text), pos)
        text = text[: pos + 1] + text[close_pos:]
        if prune and len(path) > 1:
            return remove(text, path[:-1], prune=True)
        return text
    if index > 0:
        return text[: items[index - 1].value_end] + text[items[index].value_end :]
    return text[: items[0].start] + text[items[1].start :]
