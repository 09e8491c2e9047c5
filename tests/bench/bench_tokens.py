"""Non-ASCII words: what tokenizing with SQLite's own tokenizer costs, beside ASCII.

    python tests/bench/bench_tokens.py
    python tests/bench/bench_tokens.py --memories 2000 --store-rows 20000

1. ``stored_stems`` of one text (~300 characters, ~40 words): ASCII text (the Python
   path); the same text with one non-ASCII word (SQLite's tokenizer: five such words,
   known after the first time), with a word never seen (the tokenizer's remembered
   pieces forgotten before each call), with every word non-ASCII and never seen; and
   the Python NFKD split the code used before for non-ASCII text (no longer used: the
   baseline of what the fix costs); best of 5 runs.
2. ``MemoryStore.remember`` of such texts, ASCII and non-ASCII alternating in one
   store (so both meet the same store size), per call.
3. ``reindex`` of a store of N memories all holding non-ASCII text (each row's stems
   computed again, the indexes and the frequent terms counted again).

Runs on the code before the fix too (its "SQLite tokenizer" rows are then its NFKD
split), so the two can be compared in one window.  Prints the load average beside the
figures (2 shared cores: compare rows of one run).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from vocab import WORDS  # noqa: E402 - tests/bench is on sys.path when run as a script


def _python_stems(content: str, keywords: str) -> str:
    """The NFKD split once used for non-ASCII text (marks dropped, lower-cased)."""
    from sealmem.client.store.stemmer import stem

    decomposed = unicodedata.normalize("NFKD", f"{content} {keywords}")
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()
    return " ".join(sorted({stem(word) for word in re.findall(r"[^\W_]+", folded)}))


def _best_us(fn: Callable[[str, str], str], texts: list[str]) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for text in texts:
            fn(text, "")
        best = min(best, time.perf_counter() - start)
    return best / len(texts) * 1e6


def _cold(fn: Callable[[str, str], str]) -> Callable[[str, str], str]:
    """``fn`` with the pieces the tokenizer remembers forgotten before each call."""
    from sealmem.client.store import terms

    pieces: dict[str, object] = getattr(terms, "_PIECES", {})  # none before the fix

    def call(content: str, keywords: str) -> str:
        pieces.clear()
        return fn(content, keywords)

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--store-rows", type=int, default=20000)
    args = parser.parse_args()

    from sealmem.client import MemoryStore
    from sealmem.client.store.terms import stored_stems

    rng = random.Random(16)
    extra = ["мойка", "배포", "Zürich", "東京", "café"]
    ascii_texts = [" ".join(rng.choices(WORDS, k=40)) + f" {i}" for i in range(2000)]
    mixed = [f"{t} {rng.choice(extra)}" for t in ascii_texts]
    fresh = [f"{t} {rng.choice(extra)}{i}" for i, t in enumerate(ascii_texts)]
    foreign = [" ".join(f"{w}ё" for w in t.split()) for t in ascii_texts]
    print(f"load average {os.getloadavg()}")
    print("stored_stems of one text (~40 words), µs a text, best of 5 runs")
    print(f"  ASCII (Python)                        {_best_us(stored_stems, ascii_texts):7.1f}")
    print(f"  one non-ASCII word (SQLite tokenizer) {_best_us(stored_stems, mixed):7.1f}")
    print(f"  ... each time a new one (not known)   {_best_us(_cold(stored_stems), fresh):7.1f}")
    print(f"  ... all words non-ASCII, new ones     {_best_us(_cold(stored_stems), foreign):7.1f}")
    print(f"  one non-ASCII word (old NFKD split)   {_best_us(_python_stems, mixed):7.1f}")

    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore.open(Path(tmp) / "s.db", author="ann")
        took = {"ascii": 0.0, "non-ascii": 0.0}
        for i in range(args.memories):
            for kind, texts in (("ascii", ascii_texts), ("non-ascii", mixed)):
                text = texts[i % len(texts)] + f" r{i}"
                start = time.perf_counter()
                store.remember(text, project="app")
                took[kind] += time.perf_counter() - start
        store.close()
        print(f"remember, {args.memories} of each alternating, µs per call")
        for kind, seconds in took.items():
            print(f"  {kind:10} {seconds / args.memories * 1e6:8.1f}")

        with MemoryStore.open(Path(tmp) / "big.db", author="ann") as big:
            source = MemoryStore.open(Path(tmp) / "src.db", author="bob")
            for i in range(args.store_rows):
                source.remember(mixed[i % len(mixed)] + f" n{i}", project="app")
            big.import_(source.export())
            source.close()
            start = time.perf_counter()
            big.reindex()
            seconds = time.perf_counter() - start
        print(f"reindex, {args.store_rows} memories all non-ASCII: {seconds:.2f} s")
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
