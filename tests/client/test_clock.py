"""One reading of the wall clock in the client (client/clock.py)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import sealmem.client
from sealmem.client.clock import now_ms

CLIENT = Path(sealmem.client.__file__).parent
WALL_READ = re.compile(r"\btime\.time(_ns)?\(\)|\bdatetime\.(now|utcnow)\(\)\.timestamp")


def test_now_ms_is_wall_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    got = now_ms()
    after = time.time_ns() // 1_000_000
    assert before <= got <= after


def test_no_client_module_reads_the_wall_clock_on_its_own() -> None:
    readers = sorted(
        str(path.relative_to(CLIENT))
        for path in CLIENT.rglob("*.py")
        if path.name != "clock.py" and WALL_READ.search(path.read_text(encoding="utf-8"))
    )
    assert readers == [], f"read the wall clock through sealmem.client.clock.now_ms: {readers}"
