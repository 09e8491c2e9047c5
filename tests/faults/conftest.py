"""Helpers for the fault-injection suite: real ``sealmem`` processes killed with SIGKILL at
random points, and the convergence check every case ends with.

Each case uses its own ``random.Random(seed)`` and prints the seed, so a failure can be
replayed; the delays span process start-up, the sync itself and the time after it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from sealmem.client import MemoryStore
from sealmem.client.store import journal

SEALMEM = Path(sys.executable).with_name("sealmem")


def env(home: Path) -> dict[str, str]:
    return {**os.environ, "SEALMEM_HOME": str(home)}


def start(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(SEALMEM), *args], env=env(home), cwd=home.parent,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(SEALMEM), *args], env=env(home), cwd=home.parent,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def timed(home: Path, *args: str) -> float:
    """Seconds one whole run of ``sealmem ARGS`` takes here (to aim the kills inside one)."""
    began = time.monotonic()
    run(home, *args)
    return time.monotonic() - began


def kill_after(proc: subprocess.Popen[str], delay_s: float) -> bool:
    """SIGKILL ``proc`` after ``delay_s`` unless it ended; True when it was killed."""
    try:
        proc.wait(timeout=delay_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True
    finally:
        assert proc.stdout is not None
        assert proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    return False


def seeded(seed: int) -> random.Random:
    print(f"fault seed {seed}")  # shown by pytest on a failure
    return random.Random(seed)


def sound(homes: Iterable[Path]) -> None:
    """No store was marked damaged by what was killed (the journal raises no false alarm)."""
    for home in homes:
        _tally, damage = journal.read(home / "store.db")
        assert damage is None, (home, damage)


class Member(Protocol):
    name: str
    store: MemoryStore


def winners(store: MemoryStore) -> dict[str, tuple[object, ...]]:
    """Every winning team version (tombstones too) as comparable tuples, by id."""
    rows = store.connection.execute(
        "SELECT id, hlc_wall, hlc_counter, editor, content, keywords_json, deleted, kind "
        "FROM memories WHERE visibility = 'team' ORDER BY id"
    ).fetchall()
    return {r[0]: tuple(r) for r in rows}


def converged(nodes: Iterable[Member], expected: set[str], gone: Iterable[str] = ()) -> None:
    """Every member holds the same winners, ``expected`` are all there alive, none twice,
    and ``gone`` (forgotten) are not."""
    nodes = list(nodes)
    first = winners(nodes[0].store)
    for node in nodes[1:]:
        assert winners(node.store) == first, f"{node.name} differs from {nodes[0].name}"
    contents = [str(row[4]) for row in first.values() if not row[6]]  # live ones
    assert not set(gone) & set(contents), set(gone) & set(contents)
    assert expected <= set(contents), sorted(expected - set(contents))[:5]
    assert len(contents) == len(set(contents)), "a memory is there twice"


def wait_until(predicate: object, timeout_s: float = 20.0) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
