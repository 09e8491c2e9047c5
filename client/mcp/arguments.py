"""Argument errors an agent can act on: the parameter, what it got, what it may be.

The SDK validates tool arguments with pydantic and would answer the raw
``ValidationError`` text (with ``https://errors.pydantic.dev`` links).
:func:`explain` turns it into one short line from the tool's input schema:
``recall: k=0 is not allowed; k is an integer from 1 to 100``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

__all__ = ["explain"]

_SHOWN_CHARS = 40
_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
}


def explain(tool: str, schema: dict[str, Any], exc: ValidationError) -> str:
    """One line naming each refused parameter, the value given and the values allowed."""
    properties: dict[str, Any] = schema.get("properties", {})
    defs: dict[str, Any] = schema.get("$defs", {})
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        loc = [str(part) for part in error["loc"]]
        name = loc[0] if loc else "arguments"
        where = name + "".join(f"[{part}]" for part in loc[1:])
        prop = _resolve(properties.get(name, {}), defs)
        if error["type"] == "missing":
            line = f"{where} is required"
            if described := prop.get("description"):
                line += f": {described.rstrip('.')}"
        elif name not in properties:
            line = f"{where} is not a parameter of {tool}; it takes {', '.join(properties)}"
        else:
            allowed = _allowed(_item(prop, defs) if len(loc) > 1 else prop, defs)
            subject = f"each of {name}" if len(loc) > 1 else name
            line = f"{where}={_shown(error.get('input'))} is not allowed; {subject} is {allowed}"
        if line not in problems:
            problems.append(line)
    return f"{tool}: " + "; ".join(problems)


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = prop.get("$ref")
    if isinstance(ref, str):
        return dict(defs.get(ref.rsplit("/", 1)[-1], {}))
    return prop


def _options(prop: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The non-null arms of an optional parameter (or the parameter itself)."""
    arms = prop.get("anyOf")
    if not isinstance(arms, list):
        return [_resolve(prop, defs)]
    return [_resolve(arm, defs) for arm in arms if arm.get("type") != "null"]


def _item(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    for option in _options(prop, defs):
        if option.get("type") == "array":
            return _resolve(option.get("items", {}), defs)
    return {}


def _allowed(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    parts = [_one(option, defs) for option in _options(prop, defs)]
    text = " or ".join(part for part in parts if part) or "not valid"
    if isinstance(prop.get("anyOf"), list) and any(
        arm.get("type") == "null" for arm in prop["anyOf"]
    ):
        text += " (or omit it)"
    return text


def _one(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "enum" in prop:
        return "one of: " + ", ".join(str(value) for value in prop["enum"])
    kind = prop.get("type")
    text = _TYPES.get(str(kind), "a value")
    if "pattern" in prop:
        text += f" matching {prop['pattern']}"
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and high is not None:
        text += f" from {low} to {high}"
    elif low is not None:
        text += f" of at least {low}"
    elif high is not None:
        text += f" of at most {high}"
    if kind == "array" and "items" in prop:
        text += " of " + _one(_resolve(prop["items"], defs), defs)
    return text


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."
