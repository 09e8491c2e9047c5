"""Reading Claude Code session transcripts (``~/.claude/projects/<dir>/<session>.jsonl``).

Each line is one JSON event.  The ones that matter here::

    {"type": "user", "cwd": ..., "sessionId": ..., "message": {"role": "user",
     "content": "text" | [{"type": "text", "text": ...},
                          {"type": "tool_result", "content": ..., "is_error": true}]}}
    {"type": "assistant", "message": {"role": "assistant",
     "content": [{"type": "text", "text": ...}, {"type": "tool_use", ...}]}}

Everything else (summaries, meta lines, sidechains of sub-agents, command
echoes, system reminders) is skipped, and so is a line that does not parse:
a transcript being written may end in half a line, which is read next time.
Reading starts at a byte offset and returns the offset after the last whole
line, so a follower reads each line once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .configs import claude_dir

__all__ = ["Turn", "find_transcripts", "read_turns", "transcripts_root"]

Role = Literal["user", "assistant", "tool_result"]
_SKIP_PREFIXES = ("<command-", "<local-command-", "<system-reminder>", "Caveat:", "[Request ")
MAX_READ_BYTES = 8 * 1024 * 1024  # per call; a follower catches up over several calls


@dataclass(frozen=True)
class Turn:
    """One piece of a transcript: text said by someone, or a tool's result."""

    role: Role
    text: str
    is_error: bool = False
    cwd: str | None = None


def transcripts_root() -> Path:
    """Where Claude Code keeps transcripts (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``)."""
    return claude_dir() / "projects"


def find_transcripts(root: Path | None = None) -> list[Path]:
    """Every transcript under ``root``, oldest first."""
    base = root or transcripts_root()
    if not base.is_dir():
        return []
    return sorted(base.glob("*/*.jsonl"), key=lambda p: (p.stat().st_mtime, str(p)))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block.get("text", "")
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        ]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _turns_of(event: Any) -> Iterator[Turn]:
    if not isinstance(event, dict) or event.get("isMeta") or event.get("isSidechain"):
        return
    kind = event.get("type")
    message = event.get("message")
    if kind not in ("user", "assistant") or not isinstance(message, dict):
        return
    cwd = event.get("cwd") if isinstance(event.get("cwd"), str) else None
    content = message.get("content")
    if kind == "user" and isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                text = _text_of(block.get("content"))
                yield Turn("tool_result", text, bool(block.get("is_error")), cwd)
    text = _text_of(content).strip()
    if text and not text.startswith(_SKIP_PREFIXES):
        yield Turn("user" if kind == "user" else "assistant", text, False, cwd)


def read_turns(path: Path, offset: int = 0) -> tuple[list[Turn], int]:
    """The turns in whole lines from byte ``offset`` on, and the offset after them."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read(MAX_READ_BYTES)
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    turns: list[Turn] = []
    for line in data[: end + 1].splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or arrays nested too deeply
            continue
        turns.extend(_turns_of(event))
    return turns, offset + end + 1
