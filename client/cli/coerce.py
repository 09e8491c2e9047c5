"""Plain conversion of the CLI's simple parameter types, without pydantic.

typer 0.29 converts every parameter value through a pydantic ``TypeAdapter``;
importing pydantic and building the adapters is about 90 ms of CPU, more than a
light command such as ``sealmem list`` spends on its own work.  Every parameter
of this CLI is a ``str``, ``int``, ``float``, ``bool``, ``Path`` or a list of
``str``/``Path``: :func:`install` gives each such parameter a converter written
here, with pydantic's wording for a bad value, so pydantic is never imported.
A parameter of any other type keeps typer's converter.

This uses typer's ``RuntimeParam`` seam (``typer._coercion``; the project pins
typer to 0.29.x, and ``tests/cli/test_coerce.py`` checks that every parameter of
the CLI gets this converter). ``SEALMEM_PLAIN_CLI=1`` leaves every parameter to
typer's own converter (the plain path, which the tests compare this one with).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from typer._click.exceptions import BadParameter
from typer._coercion import RuntimeParam
from typer._param_types import coerce_cli_path

__all__ = ["install"]

_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})
_FALSE = frozenset({"0", "false", "f", "no", "n", "off"})


def _bounded(value: float, info: Any) -> None:
    if info.min is not None and value < info.min:
        raise ValueError(f"Input should be greater than or equal to {info.min}")
    if info.max is not None and value > info.max:
        raise ValueError(f"Input should be less than or equal to {info.max}")


_NOT_INT = "Input should be a valid integer, unable to parse string as an integer"
_NOT_NUMBER = "Input should be a valid number, unable to parse string as a number"
#: the longest integer text pydantic parses (Python's own default limit of int())
_MAX_DIGITS = 4300


def _ascii_number(text: str) -> str | None:
    """``text`` without its surrounding spaces when it may be a number as pydantic reads
    one, else None.  Python's ``int()``/``float()`` also read other scripts' digits
    ("\u0663" is 3); pydantic (and a shell user) read only ASCII ones."""
    text = text.strip()
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # argv bytes that are not UTF-8 (surrogate escapes)
            raise ValueError(
                "Input should be a valid string, unable to parse raw data as a unicode string"
            ) from None
        return None
    return text


def _int(text: Any, info: Any) -> int:
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise ValueError("Input should be a valid integer")
    if isinstance(text, str):
        plain = _ascii_number(text)
        if plain is None:
            raise ValueError(_NOT_INT)
        whole, dot, zeros = plain.partition(".")
        if dot and zeros and not zeros.strip("0"):  # "5.0", "5.00": pydantic reads 5
            plain = whole
        if sum(c.isdigit() for c in plain) > _MAX_DIGITS:
            raise ValueError("Unable to parse input string as an integer, exceeded maximum size")
        text = plain
    try:
        value = int(text)
    except ValueError:
        raise ValueError(_NOT_INT) from None
    _bounded(value, info)
    return value


def _float(text: Any, info: Any) -> float:
    if isinstance(text, str) and _ascii_number(text) is None:
        raise ValueError(_NOT_NUMBER)
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(_NOT_NUMBER) from None
    if value != value:  # NaN: no bound holds for it
        raise ValueError("Input should be a finite number")
    _bounded(value, info)
    return value


def _bool(value: Any, info: Any) -> bool:
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError("Input should be a valid boolean, unable to interpret input")


def _str(value: Any, info: Any) -> str:
    return value if isinstance(value, str) else str(value)


_LEAVES: dict[Any, Any] = {str: _str, int: _int, float: _float, bool: _bool, Path: None}


def _leaf_of(annotation: Any) -> Any:
    """The leaf type of ``T`` or ``list[T]`` when this module converts it, else None."""
    if annotation in _LEAVES:
        return annotation
    if getattr(annotation, "__origin__", None) is list:
        (item,) = getattr(annotation, "__args__", (None,))
        return item if item in (str, Path) else None
    return None


@dataclass(frozen=True)
class _Plain(RuntimeParam):
    leaf: Any

    def _convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if self.leaf is Path:
            # typer's own path checks (exists, dir_okay, ...), with str as the type:
            # the one step of them that goes through pydantic is str -> Path.
            try:
                checked = coerce_cli_path(
                    value, self.parameter_info, path_type=str, param=param, ctx=ctx
                )
            except ValueError as exc:  # a NUL byte: os.stat refuses it
                raise BadParameter(f"Value error, {exc}", ctx=ctx, param=param) from None
            return Path(cast(str, checked))  # a str: path_type=str
        try:
            return _LEAVES[self.leaf](value, self.parameter_info)
        except ValueError as exc:
            raise BadParameter(str(exc), ctx=ctx, param=param) from None

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        if self.leaf is not self.annotation:  # list[T]
            items = value if isinstance(value, (list, tuple)) else [value]
            return [self._convert(item, param, ctx) for item in items]
        return self._convert(value, param, ctx)


def install(param: Any) -> None:
    """Give ``param`` this module's converter when its type is one of the simple ones."""
    if os.environ.get("SEALMEM_PLAIN_CLI") == "1":
        return
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or not hasattr(param, "_runtime_param"):
        return
    if descriptor.file_annotation is not None or descriptor.is_choice:
        return
    info = descriptor.parameter_info
    if info.parser is not None or getattr(info, "click_type", None) is not None:
        return
    leaf = _leaf_of(descriptor.annotation)
    if leaf is None:
        return
    param._runtime_param = _Plain(parameter_info=info, annotation=descriptor.annotation, leaf=leaf)
