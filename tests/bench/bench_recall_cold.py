"""Cold recall latency on a large synthetic store, through ``MemoryStore.recall``.

The store is built as ``bench_scale.py`` builds it (fixed seed, Zipf vocabulary of
5,000 made-up words, notes of 8-40 words with 3 keywords, written through
``MemoryStore.remember`` one minute apart, 50 notes per session), except that every
other block of 50 has no session id (origin ``cli``), so the time-gap rule runs
too.  Then a fresh Python process opens the store and asks each of the generated
2-5-word queries once (no warm-up, no query twice), timing each call; a plain FTS5
BM25 query (OR of the same words, top 5) is timed beside it in the same process.

Run:  python tests/bench/bench_recall_cold.py [--size 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import MINUTE_MS, SEED, START_MS, Generator, percentile

PROJECT = "bench"


def build(path: Path, size: int, queries: int) -> tuple[list[str], int]:
    from sealmem.client import MemoryStore

    gen = Generator(SEED)
    now = [START_MS]
    with MemoryStore.open(path, author="bench", clock=lambda: now[0]) as store:
        for i in range(size):
            content, keywords = gen.note()
            now[0] = START_MS + i * MINUTE_MS
            block = i // 50
            origin = f"bench:session-{block}" if block % 2 == 0 else "cli"
            store.remember(
                content,
                keywords=keywords,
                project=PROJECT,
                origin=origin,
                importance=round(gen.rng.random(), 2),
            )
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return [" ".join(gen.text(2, 5)) for _ in range(queries)], now[0] + 3_600_000


def child(path: Path, now_ms: int) -> int:
    from sealmem.client import MemoryStore
    from sealmem.client.recall import search as _search  # noqa: F401  (import, not a cache)

    texts = [json.loads(line) for line in sys.stdin if line.strip()]
    recall_ms, plain_ms = [], []
    with MemoryStore.open(path, author="bench", clock=lambda: now_ms) as store:
        for text in texts:
            start = time.perf_counter()
            store.recall(text, k=5, project=PROJECT)
            recall_ms.append((time.perf_counter() - start) * 1000)
            match = " OR ".join(f'"{w}"' for w in text.split())
            start = time.perf_counter()
            store.connection.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT 5",
                (match,),
            ).fetchall()
            plain_ms.append((time.perf_counter() - start) * 1000)
    json.dump({"recall": recall_ms, "plain": plain_ms}, sys.stdout)
    return 0


def figures(ms: Sequence[float]) -> str:
    return (
        f"mean {statistics.fmean(ms):6.2f}  median {statistics.median(ms):6.2f}  "
        f"p95 {percentile(ms, 0.95):6.2f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(Path(args.child[0]), int(args.child[1]))
    with tempfile.TemporaryDirectory(prefix="sealmem-cold-") as tmp:
        path = Path(tmp) / "store.db"
        started = time.perf_counter()
        texts, now_ms = build(path, args.size, args.queries)
        print(f"built {args.size:,} memories in {time.perf_counter() - started:.0f} s")
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(path), str(now_ms)],
            input="\n".join(json.dumps(t) for t in texts),
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(done.stdout)
    after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{args.queries} queries, each once, fresh process (load average {load} -> {after})")
    print(f"  MemoryStore.recall  ms {figures(result['recall'])}")
    print(f"  plain FTS5 BM25     ms {figures(result['plain'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
