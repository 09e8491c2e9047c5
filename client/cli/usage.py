"""A usage error as one line for people: what was wrong, why, and how to fix it.

typer (through click, with pydantic's wording for a bad value) prints a usage block
and ``Invalid value for '--k' / '-n': Input should be a valid integer, unable to parse
string as an integer``.  :func:`describe` words it as the rest of the CLI's refusals:
``--k 'abc' is not a whole number: give one like --k 5 ('sealmem recall --help' lists
the options)``.  The bad value is quoted from the command line, escaped by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["describe"]

_WHY: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"valid integer|as an integer"), "is not a whole number: give one like {ex}5"),
    (re.compile(r"valid number"), "is not a number: give one like {ex}0.5"),
    (re.compile(r"finite number"), "is not a finite number: give one like {ex}0.5"),
    (re.compile(r"greater than or equal to (\S+)"), "is below {0}: give {0} or more"),
    (re.compile(r"less than or equal to (\S+)"), "is above {0}: give {0} or less"),
    (re.compile(r"valid boolean"), "is not true or false: give true or false"),
    (re.compile(r"unicode string"), "is not UTF-8 text: type it again in a UTF-8 terminal"),
]


def _given(opts: Sequence[str], argv: Sequence[str]) -> str | None:
    """The value given for an option of ``opts`` on the command line (the last one)."""
    found = None
    for n, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if eq and name in opts and name.startswith("--"):
            found = value
        elif arg in opts and n + 1 < len(argv):
            found = argv[n + 1]
    return found


def _name(param: Any) -> str:
    """An option's long name (``--k``), an argument's metavar (``DAYS``)."""
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")]
    if getattr(param, "param_type_name", "") == "option" and opts:
        return str(opts[0])
    shown = getattr(param, "metavar", None) or getattr(param, "name", None) or "value"
    return str(shown).strip("[]").rstrip(".").upper()


def describe(exc: Any, argv: Sequence[str]) -> str:
    """One line for a click usage error ``exc`` of a run with ``argv``."""
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "sealmem"
    helped = f"('{path} --help' lists the options)"
    message = " ".join(str(exc.format_message()).split())
    param = getattr(exc, "param", None)
    if param is None or not message.startswith("Invalid value"):
        return f"{message.rstrip('.')} {helped}"
    reason = message.split(": ", 1)[-1]
    opt = _name(param)
    value = _given(getattr(param, "opts", []), argv) if opt.startswith("--") else None
    what = f"{opt} {value!r}" if value is not None else opt
    for pattern, words in _WHY:
        if found := pattern.search(reason):
            ex = f"{opt} " if opt.startswith("--") else ""
            return f"{what} {words.format(*found.groups(), ex=ex)} {helped}"
    return f"{what}: {reason.rstrip('.')} {helped}"
