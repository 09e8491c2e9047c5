"""Benchmark of forget's purge on a store of N memories (default 10,000).

Run: python tests/bench/bench_forget.py [N] [FORGETS]   (prints figures, asserts nothing)

The store: N memories of ~40 words from a 5,000-word vocabulary, one in five with a
second version (so ``history`` and ``history_fts`` hold N/5 rows).  Then FORGETS
(default 20) memories with history are forgotten through ``MemoryStore.forget``,
and each step of the purge is timed on its own: the tombstone transaction (purge of
``history``, secure_delete overwrite), FTS5 ``'optimize'`` of each index, and the
WAL checkpoint (TRUNCATE).  The WAL is checkpointed before each forget, so every
forget starts from the same state as a first forget after a session of writes.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sealmem.client import MemoryStore
from sealmem.client.store import writes
from sealmem.client.store.connection import transaction
from sealmem.client.store.rows import load_row


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.mean(samples):8.1f} {statistics.median(samples):8.1f} {p95:8.1f}"


def main(n: int, forgets: int) -> None:
    rng = random.Random(11)
    vocabulary = [_word(rng) for _ in range(5_000)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        with MemoryStore.open(path, author="bench") as store:
            t0 = time.perf_counter()
            twice: list[str] = []
            conn = store.connection
            with transaction(conn):  # one transaction: building the store is not measured
                for i in range(n):
                    text = " ".join(rng.choice(vocabulary) for _ in range(40)) + f" #{i}"
                    kw = [rng.choice(vocabulary) for _ in range(3)]
                    memory = store.remember(text, keywords=kw, project=f"p{i % 5}").memory
                    if i % 5 == 0:
                        store.remember(text, keywords=[rng.choice(vocabulary)], project=f"p{i % 5}")
                        twice.append(memory.id)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            built = time.perf_counter() - t0
            size = path.stat().st_size
            steps: dict[str, list[float]] = {
                "tombstone + purge (transaction)": [],
                "optimize memories_fts": [],
                "optimize history_fts": [],
                "wal_checkpoint(TRUNCATE)": [],
                "MemoryStore.forget, total": [],
            }
            chosen = rng.sample(twice, 2 * forgets)
            for memory_id in chosen[:forgets]:  # the steps one by one
                now = store._clock()
                t = time.perf_counter()
                with transaction(conn):
                    row = load_row(conn, memory_id)
                    assert row is not None
                    writes.tombstone(conn, row, author=store.author, now=now, reason="bench")
                steps["tombstone + purge (transaction)"].append(time.perf_counter() - t)
                for table in ("memories_fts", "history_fts"):
                    t = time.perf_counter()
                    with transaction(conn):
                        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
                    steps[f"optimize {table}"].append(time.perf_counter() - t)
                t = time.perf_counter()
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                steps["wal_checkpoint(TRUNCATE)"].append(time.perf_counter() - t)
            for memory_id in chosen[forgets:]:  # the public call
                t = time.perf_counter()
                store.forget(memory_id, reason="bench")
                steps["MemoryStore.forget, total"].append(time.perf_counter() - t)
        print(f"store: {n} memories, {len(twice)} with history; built in {built:.1f} s")
        print(f"store.db: {size / 1e6:.1f} MB; {forgets} forgets per row")
        print(f"{'step':34} {'mean':>8} {'median':>8} {'p95':>8}  (ms)")
        for name, samples in steps.items():
            print(f"{name:34} {_ms([s * 1000 for s in samples])}")


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 10_000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 20,
    )
