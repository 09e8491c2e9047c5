"""sealmem's hooks in Claude Code's ``settings.json``.

Claude Code reads ``"hooks": {"<Event>": [{"matcher": ..., "hooks": [{"type":
"command", "command": ..., "timeout": seconds}]}]}``.  We add one group per
event, without a matcher (so SessionStart fires on startup, resume, clear and
compact alike), and recognise our commands by their shape (``... sealmem hook
<name> [--home DIR]``, and the older ``SEALMEM_HOME=... sealmem hook <name>``)
so that uninstall removes them and nothing else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ...protocol.errors import InputError
from . import jsonedit

__all__ = [
    "EVENTS",
    "HOOK_TIMEOUT_S",
    "StaleHookError",
    "add_hooks",
    "manual_hooks",
    "our_hooks",
    "remove_hooks",
]

EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit", "stop": "Stop"}
HOOK_TIMEOUT_S = 10  # what Claude Code allows the command; our own watchdog is shorter
# Ours: ``[VAR=value ...] <...>sealmem[.exe] hook EVENT [--home DIR]``, quoted either way.
_OURS = re.compile(
    r"(?:^|[\s/\\'\"])sealmem(?:\.exe)?['\"]? hook (session-start|prompt|stop)"
    r"(?:\s+--home\s+\S.*)?\s*$"
)
_NEW = "{\n}\n"


class StaleHookError(InputError):
    """A sealmem hook is present but runs a different command."""


def _hook(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}


def manual_hooks(commands: Mapping[str, str]) -> str:
    """The ``hooks`` JSON to merge into settings.json by hand."""
    return json.dumps(
        {"hooks": {EVENTS[name]: [{"hooks": [_hook(cmd)]}] for name, cmd in commands.items()}},
        indent=2,
    )


def _groups(doc: Mapping[str, Any], where: str) -> dict[str, list[Any]]:
    hooks = doc.get("hooks", {})
    if not isinstance(hooks, dict):
        raise jsonedit.JsonConfigError(f"{where}: 'hooks' must be an object")
    out: dict[str, list[Any]] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise jsonedit.JsonConfigError(f"{where}: 'hooks.{event}' must be an array")
        out[event] = groups
    return out


def _found(doc: Mapping[str, Any], where: str) -> list[tuple[str, int, int, dict[str, Any], str]]:
    """(event, group index, hook index, hook, hook name) for every sealmem hook present."""
    found = []
    for event, groups in _groups(doc, where).items():
        for gi, group in enumerate(groups):
            inner = group.get("hooks") if isinstance(group, dict) else None
            for ci, hook in enumerate(inner if isinstance(inner, list) else []):
                command = hook.get("command") if isinstance(hook, dict) else None
                match = _OURS.search(command) if isinstance(command, str) else None
                if match:
                    found.append((event, gi, ci, hook, match.group(1)))
    return found


def our_hooks(text: str, *, where: str) -> dict[str, str]:
    """Hook name -> command, for every sealmem hook in the settings text."""
    doc = jsonedit.parse_object(text, where=where)
    return {name: hook["command"] for _, _, _, hook, name in _found(doc, where)}


def add_hooks(before: str | None, commands: Mapping[str, str], *, repair: bool, where: str) -> str:
    """Settings text with a group per hook in ``commands`` (hook name -> command)."""
    text = before if before is not None else _NEW
    doc = jsonedit.parse_object(text, where=where)
    present = _found(doc, where)
    for name, command in commands.items():
        event = EVENTS[name]
        mine = [(gi, ci, hook) for ev, gi, ci, hook, _ in present if ev == event]
        if not mine:
            text = jsonedit.append_element(text, ["hooks", event], {"hooks": [_hook(command)]})
            continue
        for gi, ci, hook in mine:
            if hook == _hook(command):
                continue
            if not repair:
                raise StaleHookError(
                    f"{where} has a sealmem {event} hook that runs {hook.get('command')!r}"
                )
            text = jsonedit.replace_value(text, ["hooks", event, gi, "hooks", ci], _hook(command))
    return text


def remove_hooks(text: str, *, prune: bool, where: str) -> str:
    """Settings text without any sealmem hook command.

    A group holding only our commands goes as a whole; from a group shared
    with other commands only our command goes.  ``prune`` also removes event
    arrays and the ``hooks`` object once they are empty.
    """
    doc = jsonedit.parse_object(text, where=where)
    groups = _groups(doc, where)
    # Remove from the end so the indexes still to visit stay valid.
    for event, gi, ci, _, _ in reversed(_found(doc, where)):
        inner = groups[event][gi]["hooks"]
        commands = [h.get("command", "") if isinstance(h, dict) else "" for h in inner]
        only_ours = all(isinstance(c, str) and _OURS.search(c) for c in commands)
        if only_ours and ci == 0:
            text = jsonedit.remove(text, ["hooks", event, gi], prune=prune)
        else:
            text = jsonedit.remove(text, ["hooks", event, gi, "hooks", ci], prune=False)
    return text
