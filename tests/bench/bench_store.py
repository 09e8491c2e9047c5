"""Benchmark of the local store: remember, get, recent, startup context, export, import.

Run: python tests/bench/bench_store.py [N]   (default N=2000; prints figures, asserts nothing)
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from sealmem.client import MemoryStore

WORDS = [
    "deploy",
    "cache",
    "postgres",
    "redis",
    "migration",
    "test",
    "lint",
    "build",
    "docker",
    "queue",
    "worker",
    "api",
    "token",
    "retry",
    "timeout",
    "index",
    "schema",
    "backup",
    "restore",
    "branch",
    "merge",
    "release",
    "config",
]


def main(n: int) -> None:
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        with MemoryStore.open(path, author="bench") as store:
            t0 = time.perf_counter()
            ids = []
            for i in range(n):
                text = " ".join(rng.choice(WORDS) for _ in range(12)) + f" #{i}"
                kind = rng.choice(["note", "fact", "lesson", "decision", "warning"])
                ids.append(store.remember(text, kind=kind, project=f"p{i % 5}").memory.id)
            t1 = time.perf_counter()
            for memory_id in rng.sample(ids, min(500, n)):
                store.get(memory_id)
            t2 = time.perf_counter()
            for _ in range(100):
                store.recent(project="p1", limit=20)
            t3 = time.perf_counter()
            for _ in range(20):
                store.startup_context(project="p1")
            t4 = time.perf_counter()
            doc = store.export()
            t5 = time.perf_counter()
            size = path.stat().st_size + Path(f"{path}-wal").stat().st_size
        with MemoryStore.open(Path(tmp) / "copy.db", author="bench") as other:
            t6 = time.perf_counter()
            result = other.import_(doc)
            t7 = time.perf_counter()
            other.import_(doc)
            t8 = time.perf_counter()
    print(f"memories: {n}, store size {size / 1e6:.1f} MB")
    print(f"remember: {n / (t1 - t0):,.0f} /s ({(t1 - t0) / n * 1e3:.2f} ms each)")
    print(f"get: {(t2 - t1) / min(500, n) * 1e3:.3f} ms each")
    print(f"recent(limit=20): {(t3 - t2) / 100 * 1e3:.2f} ms each")
    print(f"startup_context: {(t4 - t3) / 20 * 1e3:.2f} ms each")
    print(f"export: {t5 - t4:.2f} s; import: {t7 - t6:.2f} s (added {result.added}); "
          f"re-import: {t8 - t7:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
