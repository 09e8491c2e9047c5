"""Readers for the deploy/ files (stdlib only) and small helpers for starting a hub.

PyYAML is not a dependency, so :func:`load_yaml` reads the block-style YAML subset the
compose file is written in (mappings, sequences, quoted and plain scalars, flow ``[...]``
and ``{...}``) and refuses anything else (tabs, anchors, aliases, tags, block scalars,
duplicate keys, several documents) instead of guessing.
"""

from __future__ import annotations

import json
import re
import shlex
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SEALMEM = Path(sys.executable).with_name("sealmem")


class YamlSubsetError(ValueError):
    pass


# -- YAML subset -----------------------------------------------------------------


def _strip_comment(line: str) -> str:
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _key_split(text: str) -> tuple[str, str] | None:
    """``key: value`` -> (key, value) when the colon is outside quotes/brackets."""
    quote, depth = "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == ":" and depth == 0 and (i + 1 == len(text) or text[i + 1] == " "):
            return _scalar_text(text[:i].strip()), text[i + 1 :].strip()
    return None


def _scalar_text(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return str(json.loads(text))
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def _value(text: str) -> Any:
    if not text:
        return None
    if text[0] in "&*!|>":
        raise YamlSubsetError(f"unsupported YAML construct: {text!r}")
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [] if not inner else [_value(p) for p in _split_top(inner, ",")]
    if text.startswith("{") and text.endswith("}"):
        out: dict[str, Any] = {}
        inner = text[1:-1].strip()
        for part in _split_top(inner, ",") if inner else []:
            kv = _key_split(part)
            if kv is None:
                raise YamlSubsetError(f"flow mapping entry without a key: {part!r}")
            out[kv[0]] = _value(kv[1])
        return out
    if text[0] in "\"'":
        return _scalar_text(text)
    if text in ("true", "false"):
        return text == "true"
    if text in ("null", "~"):
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def load_yaml(source: str) -> Any:
    lines: list[tuple[int, str]] = []
    for number, raw in enumerate(source.splitlines(), start=1):
        if raw.strip() in ("---", "..."):
            raise YamlSubsetError(f"line {number}: document markers are not supported")
        text = _strip_comment(raw)
        if not text.strip():
            continue
        indent = len(text) - len(text.lstrip(" "))
        if text[indent] == "\t":
            raise YamlSubsetError(f"line {number}: tab in indentation")
        lines.append((indent, text.strip()))
    value, pos = _block(lines, 0, 0)
    if pos != len(lines):
        raise YamlSubsetError(f"unparsed content: {lines[pos][1]!r}")
    return value


def _block(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[Any, int]:
    if pos >= len(lines):
        return None, pos
    if lines[pos][1].startswith("- ") or lines[pos][1] == "-":
        return _sequence(lines, pos, lines[pos][0])
    return _mapping(lines, pos, lines[pos][0])


def _nested(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[Any, int]:
    """The block under a ``key:`` line: deeper, or a sequence at the same indent."""
    if pos < len(lines):
        deeper = lines[pos][0] > indent
        same_seq = lines[pos][0] == indent and lines[pos][1].startswith("- ")
        if deeper or same_seq:
            return _block(lines, pos, lines[pos][0])
    return None, pos


def _mapping(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    while pos < len(lines) and lines[pos][0] == indent and not lines[pos][1].startswith("- "):
        kv = _key_split(lines[pos][1])
        if kv is None:
            raise YamlSubsetError(f"expected 'key: value', got {lines[pos][1]!r}")
        key, rest = kv
        if key in out:
            raise YamlSubsetError(f"duplicate key {key!r}")
        pos += 1
        if rest:
            out[key] = _value(rest)
        else:
            out[key], pos = _nested(lines, pos, indent)
    if pos < len(lines) and lines[pos][0] > indent:
        raise YamlSubsetError(f"bad indentation at {lines[pos][1]!r}")
    return out, pos


def _sequence(lines: list[tuple[int, str]], pos: int, indent: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    while pos < len(lines) and lines[pos][0] == indent and lines[pos][1].startswith("-"):
        rest = lines[pos][1][1:].strip()
        if rest and _key_split(rest) is not None and rest[0] not in "\"'[{":
            # "- key: value" opens a mapping whose other keys sit at indent + 2.
            child = indent + 2
            sub = [(child, rest), *lines[pos + 1 :]]
            item, used = _mapping(sub, 0, child)
            out.append(item)
            pos += used
        elif rest:
            out.append(_value(rest))
            pos += 1
        else:
            item, pos = _nested(lines, pos + 1, indent)
            out.append(item)
    return out, pos


# -- Dockerfile and systemd unit ----------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    op: str
    args: str
    stage: int


def read_dockerfile(path: Path) -> list[Instruction]:
    """Instructions in order, continuation lines joined, comments dropped."""
    out: list[Instruction] = []
    stage = -1
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        full = (pending + line).strip()
        pending = ""
        op, _, args = full.partition(" ")
        op = op.upper()
        if op == "FROM":
            stage += 1
        out.append(Instruction(op, args.strip(), stage))
    return out


def read_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """Sections -> key -> every value given (systemd keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        if current is None or "=" not in line:
            raise ValueError(f"unit line outside a section or without '=': {line!r}")
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def exec_form(args: str) -> list[str]:
    """The JSON array of an exec-form CMD/ENTRYPOINT/HEALTHCHECK CMD."""
    value = json.loads(args)
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ValueError(f"not an exec-form array: {args!r}")
    return value


def split_command(line: str) -> list[str]:
    return shlex.split(line)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def with_option(argv: list[str], option: str, value: str) -> list[str]:
    """``argv`` with the value after ``option`` replaced (the option must be there)."""
    if option not in argv:
        raise AssertionError(f"{option} is not in {argv}")
    out = list(argv)
    out[out.index(option) + 1] = value
    return out
