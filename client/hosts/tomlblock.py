"""The one TOML table we add to Codex's ``config.toml``, between two marker comments.

The stdlib reads TOML (``tomllib``) but does not write it, and a round trip
through any writer would lose the user's comments and layout.  So we never
rewrite the file: we append exactly one marked block and, to uninstall, cut
exactly that block out again.  The emitter below covers only what the block
holds (strings, lists of strings, a flat inline table of strings).

The block is ``"\\n" + BEGIN + table + END + "\\n"``; removing those same
characters restores the original bytes whatever followed or preceded them.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from ...protocol.errors import InputError

__all__ = [
    "BEGIN",
    "END",
    "TomlConfigError",
    "add_block",
    "find_block",
    "parse_toml",
    "remove_block",
    "render_table",
    "replace_block",
    "toml_key",
    "toml_string",
]

BEGIN = "# >>> sealmem: added by 'sealmem install codex'; 'sealmem uninstall codex' removes it"
END = "# <<< sealmem"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


class TomlConfigError(InputError):
    """A TOML config cannot be parsed, or already holds a sealmem table we did not add."""


def parse_toml(text: str, *, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlConfigError(f"{where} is not valid TOML ({exc})") from exc


def toml_string(value: str) -> str:
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else toml_string(key)


def _value(value: object) -> str:
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{toml_key(str(k))} = {_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"the sealmem TOML emitter does not write {type(value).__name__} values")


def render_table(table_path: Sequence[str], entry: Mapping[str, Any]) -> str:
    """``[a.b]`` followed by ``key = value`` lines, between the markers."""
    header = "[" + ".".join(toml_key(part) for part in table_path) + "]"
    lines = [BEGIN, header, *(f"{toml_key(k)} = {_value(v)}" for k, v in entry.items()), END]
    return "\n".join(lines)


def find_block(text: str) -> tuple[int, int] | None:
    """Span of ``"\\n" + block + "\\n"`` in ``text``, or None when there is no block."""
    start = text.find("\n" + BEGIN + "\n")
    if start < 0:
        return None
    end = text.find("\n" + END + "\n", start)
    if end < 0:
        return None
    return start, end + len(END) + 2


def add_block(text: str, block: str) -> str:
    """Append ``block`` (from :func:`render_table`) at the end of ``text``."""
    if find_block(text) is not None:
        raise TomlConfigError("the config already holds a sealmem block")
    return text + "\n" + block + "\n"


def remove_block(text: str) -> str | None:
    """``text`` without our block, or None when there is no block."""
    span = find_block(text)
    if span is None:
        return None
    return text[: span[0]] + text[span[1] :]


def replace_block(text: str, block: str) -> str:
    span = find_block(text)
    if span is None:
        raise TomlConfigError("the config holds no sealmem block to replace")
    return text[: span[0]] + "\n" + block + "\n" + text[span[1] :]
