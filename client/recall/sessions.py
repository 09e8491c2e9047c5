"""Session origins: which write paths say which session a memory came from.

Recall links memories written in the same session (see
:mod:`sealmem.client.recall.search`).  A write path that knows its session
stores the origin ``"<tool>:<session id>"``:

- the Claude Code hooks: ``claude-code:<session_id>`` from the hook's JSON input;
- the MCP server: ``mcp:<12 hex>`` per server process, or ``mcp:<session>`` when
  the client names its session in the ``remember`` tool;
- the CLI: ``cli:$SEALMEM_SESSION`` when that variable is set.

Everything else (old memories, imports, the CLI without the variable) stores a
bare tool name, and recall falls back on the time-gap rule.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping

from ...protocol.errors import InputError

__all__ = [
    "MAX_SESSION_CHARS",
    "SESSION_ENV",
    "SESSION_PATTERN",
    "cli_origin",
    "host_origin",
    "session_origin",
]

MAX_SESSION_CHARS = 48  # "claude-code:" + 48 stays within the record's 64-character origin
SESSION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
SESSION_ENV = "SEALMEM_SESSION"
_SESSION_RE = re.compile(SESSION_PATTERN)


def session_origin(tool: str, session: str) -> str:
    """``"<tool>:<session>"``, or :class:`InputError` naming what is wrong with ``session``."""
    if not isinstance(session, str) or not session:
        raise InputError("the session id is empty; pass letters, digits, '.', '_' or '-'")
    if len(session) > MAX_SESSION_CHARS or not _SESSION_RE.match(session):
        raise InputError(
            f"session id {session[:80]!r} is not valid: use 1..{MAX_SESSION_CHARS} letters, "
            "digits, '.', '_' or '-', starting with a letter or digit (a UUID fits)"
        )
    return f"{tool}:{session}"


def host_origin(tool: str, session: object) -> str:
    """The origin for a host's session id, never refusing: a valid id as it is, any
    other non-empty string as a short digest of it (the same id always gives the same
    origin), nothing usable as the bare ``tool`` (the time-gap rule then applies)."""
    if not isinstance(session, str) or not session.strip():
        return tool
    try:
        return session_origin(tool, session)
    except InputError:
        digest = hashlib.blake2b(session.encode("utf-8", "replace"), digest_size=12).hexdigest()
        return f"{tool}:{digest}"


def cli_origin(environ: Mapping[str, str] | None = None) -> str:
    """``cli:$SEALMEM_SESSION`` when set (validated), else the bare ``cli``."""
    value = (os.environ if environ is None else environ).get(SESSION_ENV, "").strip()
    if not value:
        return "cli"
    try:
        return session_origin("cli", value)
    except InputError as exc:
        raise InputError(f"{SESSION_ENV}: {exc}; unset it or fix its value") from exc
