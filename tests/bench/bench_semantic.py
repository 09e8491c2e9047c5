"""What the semantic extra (``sealmem[semantic]``: all-MiniLM-L6-v2, int8 ONNX) adds to
recall, beside the lexical default in the same run.

Everything goes through the real path: memories remembered through ``MemoryStore``,
their vectors derived by ``semantic.fill`` into the store's ``embeddings`` table,
recall through ``MemoryStore.recall`` (k=5) with this process's embedder on and off.

- **Paraphrases** (``tests/bench/data/paraphrases.json``, ``pairs``): 100 agent-memory
  questions, each asking for one memory in other words; all 100 memories in one store
  (each its own session: no session context), each a distractor for the others.
  Hit@1/3/5 and MRR of the lexical default, of the cosine alone, and of the fusion at
  the shipped ``WEIGHTS`` (the lifts of the two closest) and a grid around them.
- **Words and identifiers**: each of those memories asked for by its own rarest word
  and by an identifier it holds, lexical and with the extra (hit@5 must stay 100 %).
- **Threshold**: for each paraphrase query, the cosine of its memory and of the best
  wrong one (a store without the answer): the share of each at or over a threshold.
- **Other scripts** (``scripts``): Chinese, Japanese, Korean, Russian, German
  paraphrases, their memories added to the 100 (distractors all).
- **Cost**: the model's load; a vector's write cost per memory (wall and CPU) and its
  size in the store; recall p95 in a warm process, lexical, with the query embedding
  computed (each query new to the cache) and cached (asked again), with load averages.
- **LoCoMo** (``--locomo``): per conversation, hit@5 of ``recall.search`` with the
  embedder off and on (each grid point); leave-one-conversation-out picks the grid point
  on four and scores the fifth.  Slow: every turn gets a vector (2,760 passages).

Run:  python tests/bench/bench_semantic.py [--locomo] [--threads 1] [--data FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

DATA = Path(__file__).resolve().parent / "data" / "paraphrases.json"
GRID = [(first, second) for first in (0.5, 1.0, 2.0) for second in (0.0, 0.1, 0.2, 0.3, 0.5)]


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


class Toggle:
    """The process's embedder on or off, and the lifts of the two closest set."""

    def __init__(self, embedder: Any) -> None:
        from sealmem.client.recall import semantic

        self.semantic, self.embedder = semantic, embedder
        self.shipped = semantic.WEIGHTS

    def __call__(self, on: bool, first: float | None = None, second: float | None = None) -> None:
        self.semantic._ACTIVE = self.embedder if on else None
        self.semantic.WEIGHTS = self.shipped if first is None else (first, second)


def scores(ranked: list[list[str]], wanted: list[str]) -> str:
    n = len(wanted)
    hit = {k: sum(w in r[:k] for r, w in zip(ranked, wanted, strict=True)) for k in (1, 3, 5)}
    mrr = sum(1 / (r.index(w) + 1) if w in r else 0.0 for r, w in zip(ranked, wanted, strict=True))
    return (
        f"hit@1 {100 * hit[1] / n:5.1f}  hit@3 {100 * hit[3] / n:5.1f}  "
        f"hit@5 {100 * hit[5] / n:5.1f}  MRR {mrr / n:5.3f}"
    )


def build(tmp: Path, name: str, texts: list[str], embedder: Any) -> tuple[Any, list[str]]:
    from sealmem.client import MemoryStore
    from sealmem.client.recall import semantic

    store = MemoryStore.open(tmp / f"{name}.db", author="bench")
    ids = [
        store.remember(text, project="p", origin=f"bench:m{i}").memory.id
        for i, text in enumerate(texts)
    ]
    wall, cpu = time.perf_counter(), time.process_time()
    written = semantic.fill(store.connection, embedder, batch=semantic.BATCH)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    (size,) = store.connection.execute(
        "SELECT sum(length(vector)) + 9 * count(*) FROM embeddings"
    ).fetchone()
    print(
        f"  {name}: {written} vectors derived, {1000 * wall / written:.1f} ms wall / "
        f"{1000 * cpu / written:.1f} ms CPU per memory (batches of {semantic.BATCH}); "
        f"~{size / written:.0f} bytes per memory in the store (load {load_average()})"
    )
    return store, ids


def ranked_ids(store: Any, queries: list[str]) -> list[list[str]]:
    return [[h.memory.id for h in store.recall(q, project="p", k=5)] for q in queries]


def paraphrases(
    embedder: Any, toggle: Toggle, tmp: Path, source: Path = DATA
) -> tuple[Any, list[str]]:
    import numpy as np

    data = json.loads(source.read_text(encoding="utf-8"))
    pairs, scripts = data["pairs"], data["scripts"]
    print(f"\nParaphrases: {len(pairs)} questions over {len(pairs)} memories")
    store, ids = build(tmp, "paraphrases", [t for _, t in pairs], embedder)
    queries = [q for q, _ in pairs]
    toggle(False)
    print(f"  {'lexical default':24s} {scores(ranked_ids(store, queries), ids)}")
    P = embedder.passages([t for _, t in pairs])
    Q = np.stack([embedder.query(x) for x in queries])
    S = Q @ P.T
    alone = [[ids[j] for j in np.argsort(-S[i])[:5]] for i in range(len(pairs))]
    print(f"  {'cosine alone':24s} {scores(alone, ids)}")
    for first, second in GRID:
        toggle(True, first, second)
        mark = " (shipped)" if (first, second) == toggle.shipped else ""
        label = f"fused {first}, {second}{mark}"
        print(f"  {label:24s} {scores(ranked_ids(store, queries), ids)}")
    words_and_identifiers(store, [t for _, t in pairs], ids, toggle)
    toggle(True)
    right = np.diag(S)
    wrong = np.where(np.eye(len(pairs), dtype=bool), -1.0, S).max(axis=1)
    print("\nThreshold: share of queries whose memory / best wrong memory is at or over t")
    for t in (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7):
        print(
            f"  t={t:.2f}: right {100 * (right >= t).mean():5.1f} %   "
            f"best wrong {100 * (wrong >= t).mean():5.1f} %"
        )
    print(f"  right cosine quartiles {np.percentile(right, [5, 25, 50, 75]).round(3)}")

    print(f"\nOther scripts: {len(scripts)} questions; their memories join the store")
    from sealmem.client.recall import semantic

    more = [
        store.remember(text, project="p", origin=f"bench:s{i}").memory.id
        for i, (_, text) in enumerate(scripts)
    ]
    semantic.fill(store.connection, embedder)
    squeries = [q for q, _ in scripts]
    for on, label in ((False, "lexical default"), (True, "with the extra")):
        toggle(on)
        ranked = ranked_ids(store, squeries)
        print(f"  {label:24s} {scores(ranked, more)}")
        if on:
            for (query, _), r, want in zip(scripts, ranked, more, strict=True):
                rank = r.index(want) + 1 if want in r else "-"
                print(f"    {query}  rank {rank}")
    return store, queries


def words_and_identifiers(store: Any, texts: list[str], ids: list[str], toggle: Toggle) -> None:
    """Each memory asked for by a word of its own: its rarest word of 4 characters or more
    (fewest memories holding it, then the longest), and its first identifier (a token
    with a digit, ``_ . / : -`` or an inner capital: ``acme-prod-files``, ``PostgreSQL``),
    derived from the texts, not written for the ranker."""
    token = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]*[A-Za-z0-9]")
    held = [set(token.findall(text)) for text in texts]
    df = Counter(w.lower() for words in held for w in words)
    asks: dict[str, list[tuple[str, str]]] = {"rarest word": [], "identifier": []}
    for words, wanted in zip(held, ids, strict=True):
        rare = sorted((df[w.lower()], -len(w), w) for w in words if len(w) >= 4)
        if rare:
            asks["rarest word"].append((rare[0][2], wanted))
        named = sorted(w for w in words if re.search(r"[0-9_./:-]|[a-z][A-Z]", w))
        if named:
            asks["identifier"].append((named[0], wanted))
    print("\nWords and identifiers: each memory asked for by one of its own words")
    for on, label in ((False, "lexical default"), (True, "with the extra")):
        toggle(on)
        for kind, pairs in asks.items():
            ranked = ranked_ids(store, [q for q, _ in pairs])
            print(
                f"  {label:16s} {kind:12s} ({len(pairs):3d}) "
                f"{scores(ranked, [w for _, w in pairs])}"
            )


def latency(store: Any, queries: list[str], toggle: Toggle, embedder: Any) -> None:
    def run(label: str, prepare: Callable[[], None]) -> None:
        wall, cpu = [], []
        for q in queries:
            prepare()
            w, c = time.perf_counter(), time.process_time()
            store.recall(q, project="p", k=5)
            wall.append(1000 * (time.perf_counter() - w))
            cpu.append(1000 * (time.process_time() - c))
        print(
            f"  {label:34s} median {statistics.median(wall):6.2f}  p95 "
            f"{percentile(wall, 0.95):6.2f} ms wall; p95 {percentile(cpu, 0.95):6.2f} ms CPU "
            f"(load {load_average()})"
        )

    print(f"\nRecall in a warm process, {len(queries)} queries, k=5, ~116 memories")
    toggle(False)
    run("lexical default", lambda: None)
    toggle(True)
    run("extra, query embedded (new)", embedder._queries.clear)
    for q in queries:
        embedder.query(q)
    run("extra, query vector cached", lambda: None)


def locomo(embedder: Any, toggle: Toggle, tmp: Path) -> None:
    import bench_locomo as lb

    from sealmem.client.recall import search as retrieval
    from sealmem.client.recall import semantic
    from sealmem.client.recall.ranking import RankingWeights

    points: list[tuple[float, float] | None] = [None, *GRID]
    hits: dict[str, dict[Any, list[bool]]] = {}
    convs = [lb.load(lb.DEFAULT_DATA / f"{name}.json") for name in lb.FILES]
    unanswerable = lb.no_answer_set(convs)  # (store index, its questions)
    sets = {
        "as asked": dict(unanswerable),
        "speakers renamed": dict(lb.renamed(convs, unanswerable)),
    }
    empty: dict[tuple[str, bool], list[bool]] = {(k, on): [] for k in sets for on in (False, True)}
    for index, (name, conv) in enumerate(zip(lb.FILES, convs, strict=True)):
        built = lb.build_store(conv, tmp, sessions=True)
        evaluator = lb.Evaluator({name: built})
        conn = evaluator.stores[name].connection
        w, c = time.perf_counter(), time.process_time()
        n = semantic.fill(conn, embedder)
        print(
            f"  {name}: {n} vectors, {1000 * (time.perf_counter() - w) / n:.1f} ms wall, "
            f"{1000 * (time.process_time() - c) / n:.1f} ms CPU each (load {load_average()})",
            flush=True,
        )
        per: dict[Any, list[bool]] = {p: [] for p in points}
        for point in points:
            toggle(point is not None, *(point or (None, None)))
            for qa in conv.questions:
                found = retrieval.search(
                    conn, qa["question"], k=5, projects=[lb.PROJECT], include_history=False,
                    kinds=None, now_ms=built.now_ms, weights=RankingWeights(),
                )  # fmt: skip
                top = {built.by_id.get(s.id, "?") for s in found}
                per[point].append(bool(set(qa["evidence"]) & top))
        for (label, on), out in empty.items():  # questions with no answer in this store
            toggle(on)
            out += [
                not retrieval.search(
                    conn,
                    qa["question"],
                    k=5,
                    projects=[lb.PROJECT],
                    include_history=False,
                    kinds=None,
                    now_ms=built.now_ms,
                    weights=RankingWeights(),
                )
                for qa in sets[label].get(index, [])
            ]
        evaluator.close()
        hits[name] = per
        shipped = per[toggle.shipped]
        print(
            f"  {name}: lexical {100 * statistics.fmean(per[None]):5.1f}  "
            f"extra (shipped) {100 * statistics.fmean(shipped):5.1f}",
            flush=True,
        )
    toggle(True)
    folds = []
    for held in hits:
        others = [n for n in hits if n != held]
        point = max(GRID, key=lambda p: (sum(sum(hits[n][p]) for n in others), -p[1]))
        folds.append(100 * statistics.fmean(hits[held][point]))
        print(f"  held out {held}: lifts {point} chosen on the other four, hit@5 {folds[-1]:5.1f}")
    for label, key in (("lexical", None), ("extra, shipped", toggle.shipped)):
        per_conv = [100 * statistics.fmean(h[key]) for h in hits.values()]
        pooled = [x for h in hits.values() for x in h[key]]
        print(
            f"  {label:16s} mean of five {statistics.fmean(per_conv):5.1f}  pooled "
            f"{100 * statistics.fmean(pooled):5.1f}  spread {min(per_conv):.1f}-{max(per_conv):.1f}"
        )
    spread = f"{min(folds):.1f}-{max(folds):.1f}"
    print(f"  extra, LOO mean {statistics.fmean(folds):5.1f}  spread {spread}")
    for label in sets:
        words, meaning = empty[label, False], empty[label, True]
        print(
            f"  no answer in the store, {label} ({len(words)} questions): empty "
            f"{100 * statistics.fmean(words):5.1f} % lexical, "
            f"{100 * statistics.fmean(meaning):5.1f} % with the extra (shipped)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", action="store_true", help="also LoCoMo (slow)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only-locomo", action="store_true", help="LoCoMo alone")
    parser.add_argument(
        "--data", type=Path, default=DATA, help="the paraphrase pairs and scripts (JSON)"
    )
    args = parser.parse_args(argv)
    from sealmem.client.recall import semantic

    if not semantic.available():
        print("the semantic extra is not installed: pip install 'sealmem[semantic]'")
        return 2
    print(f"load average {load_average()}")
    embedder = semantic.Embedder(args.threads)
    w, c = time.perf_counter(), time.process_time()
    embedder.query("warm up")
    print(
        f"model load + first query: {1000 * (time.perf_counter() - w):.0f} ms wall, "
        f"{1000 * (time.process_time() - c):.0f} ms CPU, {args.threads} thread(s)"
    )
    toggle = Toggle(embedder)
    with tempfile.TemporaryDirectory(prefix="sealmem-semantic-") as tmp:
        if not args.only_locomo:
            store, queries = paraphrases(embedder, toggle, Path(tmp), args.data)
            latency(store, queries, toggle, embedder)
            store.close()
        if args.locomo or args.only_locomo:
            print("\nLoCoMo hit@5 (%), recall.search k=5, default ranking weights")
            locomo(embedder, toggle, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
