"""Time of the startup context on a large store, with teammates' memories in it.

    python tests/bench/bench_context.py [--own 20000] [--theirs 5000] [--writers 5] [--runs 7]

Builds a store in a temporary directory: ``--own`` memories written here and
``--theirs`` arrived from ``--writers`` verified teammates (through the store's one
writer, as a pull stores them; a tenth of them supersede one of the reader's), then
prints the median and p95 wall time of ``MemoryStore.startup_context`` over ``--runs``
runs, and how many lines of the context are the reader's own.  Run it on two
revisions to compare (the API is the same on both).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from sealmem.client import MemoryStore
from sealmem.client.store.connection import transaction
from sealmem.client.store.memory import Provenance
from sealmem.client.store.writer import Batch, Write, write
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id

KINDS = ("warning", "decision", "note", "lesson", "fact")


def _build(path: Path, own: int, theirs: int, writers: int) -> MemoryStore:
    store = MemoryStore.open(path, author="r" * 26)
    now = int(time.time() * 1000) - 10_000_000
    mine: list[str] = []
    with transaction(store.connection):
        for i in range(own):
            text = f"own memory {i} about module m{i % 300} and its tests"
            kind = KINDS[i % len(KINDS)]
            mine.append(store.remember(text, kind=kind, project="p").memory.id)
    writes = []
    for i in range(theirs):
        kid = chr(ord("a") + i % writers) * 26
        at = now + i
        sup = (mine[i % len(mine)],) if mine and i % 10 == 0 else ()
        record = Record(
            new_memory_id(at, os.urandom(10)), "p", KINDS[i % 3], f"teammate note {i} " * 5,
            (), 1.0, kid, kid, at, Hlc(at, 0), sup,
        ).validate()  # fmt: skip
        writes.append(Write(record, Provenance("folder", kid, None, True, at, 1), 1.0, 0, at, None))
    with transaction(store.connection) as conn:
        write(conn, Batch(writes=writes))
    return store


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--own", type=int, default=20_000)
    parser.add_argument("--theirs", type=int, default=5_000)
    parser.add_argument("--writers", type=int, default=5)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = _build(Path(tmp) / "store.db", args.own, args.theirs, args.writers)
        times, text = [], ""
        for _ in range(args.runs):
            started = time.perf_counter()
            text = store.startup_context(project="p")
            times.append(time.perf_counter() - started)
        lines = [ln for ln in text.splitlines() if ln.lstrip().startswith("- [")]
        own = sum(1 for ln in lines if "from " not in ln and "proposal" not in ln)
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        print(
            f"startup_context own={args.own} theirs={args.theirs} writers={args.writers}: "
            f"median {statistics.median(times) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms; "
            f"{len(lines)} lines, {own} the reader's own"
        )
        store.close()


if __name__ == "__main__":
    main()
