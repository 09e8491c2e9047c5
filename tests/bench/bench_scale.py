"""Store and recall at scale: remember throughput, recall latency, size on disk.

For each size (default 1k, 10k, 100k) a fresh MemoryStore in a temporary
directory is filled through ``MemoryStore.remember`` with generated notes (a
fixed seed, a Zipf-like vocabulary of 5,000 words, 8-40 words per note, 50
sessions a day with a fake clock moving one minute per note, a few keywords),
then 200 generated queries of 2-5 words are recalled with the default ranking
(``MemoryStore.recall``, k=5).  For scale, the last column times a plain FTS5
BM25 query (OR of the same words, top 5) on the same store.

Run:  python tests/bench/bench_scale.py [--sizes 1000 10000 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from sealmem.client import MemoryStore

SEED = 20250501
VOCABULARY = 5000
START_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z
MINUTE_MS = 60_000


def _word(i: int) -> str:
    consonants, vowels = "bcdfghjklmnprstvz", "aeiou"
    out = []
    while True:
        out.append(consonants[i % len(consonants)] + vowels[(i // len(consonants)) % len(vowels)])
        i //= len(consonants) * len(vowels)
        if not i:
            return "".join(out) + "x"


class Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = [_word(i + 7) for i in range(VOCABULARY)]
        self.weights = [1.0 / (rank + 1) for rank in range(VOCABULARY)]  # Zipf, s = 1

    def text(self, low: int, high: int) -> list[str]:
        n = self.rng.randint(low, high)
        return self.rng.choices(self.words, weights=self.weights, k=n)

    def note(self) -> tuple[str, list[str]]:
        words = self.text(8, 40)
        return " ".join(words).capitalize() + ".", self.rng.sample(words, min(3, len(words)))


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def run(size: int, queries: int, where: Path) -> dict[str, float]:
    gen = Generator(SEED)
    now = [START_MS]
    path = where / f"scale-{size}.db"
    store = MemoryStore.open(path, author="bench", clock=lambda: now[0])
    with store:
        start = time.perf_counter()
        for i in range(size):
            content, keywords = gen.note()
            now[0] = START_MS + i * MINUTE_MS
            store.remember(
                content,
                keywords=keywords,
                project="bench",
                origin=f"bench:session-{i // 50}",
                importance=round(gen.rng.random(), 2),
            )
        remember_s = time.perf_counter() - start
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        texts = [" ".join(gen.text(2, 5)) for _ in range(queries)]
        store.recall(texts[0], project="bench")  # warm the statement cache
        latencies = []
        plain = []
        found = 0
        for text in texts:
            t0 = time.perf_counter()
            hits = store.recall(text, k=5, project="bench")
            latencies.append((time.perf_counter() - t0) * 1000)
            found += bool(hits)
            match = " OR ".join(f'"{w}"' for w in text.split())
            t0 = time.perf_counter()
            store.connection.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT 5",
                (match,),
            ).fetchall()
            plain.append((time.perf_counter() - t0) * 1000)
    size_bytes = sum(p.stat().st_size for p in where.glob(f"scale-{size}.db*"))
    return {
        "size": size,
        "remember_per_s": size / remember_s,
        "p50": statistics.median(latencies),
        "p95": percentile(latencies, 0.95),
        "mean": statistics.fmean(latencies),
        "plain_p50": statistics.median(plain),
        "plain_p95": percentile(plain, 0.95),
        "answered": 100 * found / queries,
        "mib": size_bytes / 2**20,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    print(
        f"{'memories':>9} {'remember/s':>11} {'recall p50 ms':>14} {'p95 ms':>8} "
        f"{'mean ms':>8} {'answered %':>11} {'store MiB':>10} {'plain FTS5 p50/p95 ms':>22}"
    )
    with tempfile.TemporaryDirectory(prefix="sealmem-scale-") as tmp:
        for size in args.sizes:
            r = run(size, args.queries, Path(tmp))
            print(
                f"{r['size']:>9,.0f} {r['remember_per_s']:>11,.0f} {r['p50']:>14.2f} "
                f"{r['p95']:>8.2f} {r['mean']:>8.2f} {r['answered']:>11.0f} {r['mib']:>10.1f} "
                f"{r['plain_p50']:>14.2f} / {r['plain_p95']:.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
