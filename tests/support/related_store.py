"""A store where a strong match has two session neighbours and two weak, older matches
come from other sessions: what the CLI and MCP tests of related results read."""

from __future__ import annotations

import time
from pathlib import Path

from sealmem.client import MemoryStore

QUERY = "kafka redis nginx"
STRONG = "kafka redis nginx make up the queue stack"


def write_queue_stack(path: Path, tool: str, project: str = "webshop") -> None:
    """Five memories in the store at ``path``, with origins of ``tool`` (``cli``, ``mcp``)."""
    day, now = 24 * 3600 * 1000, int(time.time() * 1000)
    at = [now]
    path.parent.mkdir(parents=True, exist_ok=True)
    with MemoryStore.open(path, author="ana", clock=lambda: at[0]) as store:
        for text, session, when in (
            ("nginx sits in front of the api", "s2", now - 60 * day),
            ("nginx logs rotate daily", "s3", now - 30 * day),
            (STRONG, "s1", now - 3 * 60_000),
            ("the lunch order goes out at noon", "s1", now - 2 * 60_000),
            ("the build takes ten minutes on the laptop", "s1", now - 60_000),
        ):
            at[0] = when
            store.remember(text, project=project, origin=f"{tool}:{session}")
