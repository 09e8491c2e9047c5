"""The prompt hook on a store another process is writing: what it injects is printed
within the hook's budget; the recall note, which needs the write lock, waits
``NOTE_WAIT_MS`` at most and is written by a later prompt (:mod:`..store.freshness`)."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from sealmem.client.hosts import hooks
from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from tests.hosts.conftest import Env

pytestmark = pytest.mark.slow

DAY = 86_400_000
QUERY = "which port does the billing service listen on?"


def _stale(env: Env) -> list[str]:
    with MemoryStore.open(store_path(env.state), author=local_author(env.state)) as s:
        return [m.id for m, _ in s.stale(all_projects=True)]


def test_a_write_lock_held_elsewhere_loses_no_injection(env: Env) -> None:
    old = time.time_ns() // 1_000_000 - 200 * DAY
    author = local_author(env.state)
    with MemoryStore.open(store_path(env.state), author=author, clock=lambda: old) as s:
        memory_id = s.remember(
            "The billing service listens on port 8080 behind the proxy.", project="webshop"
        ).memory.id
    stdin = json.dumps({"session_id": "s1", "cwd": str(env.project), "prompt": QUERY})
    writer = sqlite3.connect(store_path(env.state), isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # a sync or an import writing, for longer than 2 s
        out = hooks.run("prompt", lambda: stdin, budget_s=hooks.HOOK_BUDGET_S)
        writer.execute("ROLLBACK")
    finally:
        writer.close()
    assert "8080" in out  # within the budget: a hook past it prints nothing
    assert _stale(env) == [memory_id]  # the note waited for no lock: not written
    assert "8080" in hooks.run("prompt", lambda: stdin, budget_s=hooks.HOOK_BUDGET_S)
    assert _stale(env) == []  # the next prompt, with the store free, notes it
