"""Help that reads like a man page: ``--kind KIND``, ``TEXT``, flags with no type.

(The same walk over the command tree also gives each parameter of a simple type
the plain converter of :mod:`.coerce`, which spares a command pydantic.)

typer shows each parameter's Python type (``<str>``, ``<list[str]>``, and
``<bool>`` beside every flag).  :class:`ReadableGroup` is the top command group;
when typer builds the command tree it gives each parameter that has no
``metavar`` of its own a conventional one, as argparse does: an option takes
its long name in capitals (``--project PROJECT``), an argument its name
(``TEXT``, ``IDS...``), a flag none.  Choices keep typer's ``a|b|c``, which
already names the values.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from typing import Any

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

from . import coerce

__all__ = ["ReadableGroup", "metavar_for"]

#: What an option's value is, where its name in capitals would not say it
#: (``--supersedes SUPERSEDES``, ``--as AS``).
_VALUE_NAMES = {
    "supersedes": "ID",
    "as": "NAME",
    "for": "NAME",
    "k": "N",
    "limit": "N",
    "importance": "0..1",
    "output": "FILE",
    "key-bundle": "FILE",
    "folder": "PATH",
    "hub": "URL",
    "expires": "DURATION",
    "operator-token": "TOKEN",
    "allow-team": "TEAM_ID",
    "interval": "SECONDS",
    "max-backoff": "SECONDS",
    "warn-after": "HOURS",
    "stop-after": "HOURS",
    "data": "DIR",
    "home": "DIR",
    "root": "DIR",
    "db": "URL",
    "blobs": "URL",
    "team-quota-mb": "MIB",
    "member-rate": "N",
    "member-burst": "N",
    "metrics-token": "TOKEN",
}


def metavar_for(param: Any) -> str | None:
    """The metavar ``param`` should show, or None to leave typer's."""
    if param.metavar is not None:
        return None
    if isinstance(param, TyperOption):
        if param.is_flag:
            return ""  # a flag takes no value: show none
        if param.type_descriptor.is_choice:
            return None
        longs = [o for o in param.opts if o.startswith("--")]
        name = (longs[0] if longs else param.opts[0]).lstrip("-")
        return _VALUE_NAMES.get(name, name.replace("-", "_").upper())
    if isinstance(param, TyperArgument):
        return (param.name or "value").upper()  # typer adds the "..." of a list itself
    return None


def _no_type(ctx: Any) -> None:
    """An argument's type column: its metavar already says what it is."""
    return None


def _usage_name(param: Any) -> Any:
    """An argument on the usage line as man pages write it: ``TEXT``, ``[IDS]...`` (typer
    writes a required one ``{TEXT}``)."""

    def name() -> str:
        raw = str(param.display_name_raw)
        if raw.startswith("["):  # a metavar that says it all: "[NAME|KID]..."
            return raw
        shown = raw if param.required else f"[{raw}]"
        return shown + ("..." if param.nargs != 1 and not raw.endswith("...") else "")

    return name


def _commands(command: Any) -> Iterator[Any]:
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _commands(sub)


def _readable_params(params: Iterable[Any]) -> None:
    for param in params:
        coerce.install(param)
        metavar = metavar_for(param)
        if metavar is not None:
            param.metavar = metavar
        if isinstance(param, TyperArgument) and not param.type_descriptor.is_choice:
            param.display_type_rich = _no_type  # type: ignore[method-assign]
        if isinstance(param, TyperArgument):
            param._usage_display_name = _usage_name(param)  # type: ignore[method-assign]


def _summary(command: Any) -> None:
    """The whole first paragraph of a command's help as its line in the command list.

    click would cut it to the room left on an 80-column line ("print where..."); its
    list wraps a long line instead, so nothing is lost.
    """
    if command.short_help or not command.help:
        return
    paragraph = inspect.cleandoc(command.help).split("\n\n", 1)[0]
    command.short_help = " ".join(paragraph.split())


def _readable(command: Any) -> None:
    _summary(command)
    _readable_params(command.params)
    help_option = command.get_help_option(typer.Context(command))
    if help_option is not None:
        _readable_params([help_option])


class ReadableGroup(TyperGroup):
    """The top-level group: gives every command below it readable metavars."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for command in _commands(self):
            _readable(command)

    def get_params(self, ctx: Any) -> list[Any]:
        # typer adds --install-completion and --show-completion after __init__
        params: list[Any] = super().get_params(ctx)
        _readable_params(params)
        return params
