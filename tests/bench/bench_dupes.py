"""Near-duplicate grouping (:mod:`sealmem.client.recall.dupes`) on hand-written pairs.

Repeats: the ``repeats`` of ``data/dupes.json`` (one lesson written twice: reworded by
one writer, or by two teammates), which must group.  Distinct pairs, which must not:
its ``same_topic`` pairs (two memories on one subject), every cross pair of the
repeats' first texts, every pair of the memories of ``data/paraphrases.json``, and
neighbouring turns of each LoCoMo session (``--locomo DIR``, default
``$SEALMEM_LOCOMO`` or /work/shared/data/locomo; skipped when absent).  Prints, per
threshold, the share of repeats grouped and the false groupings of each kind.

Run:  python tests/bench/bench_dupes.py [--locomo DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from pathlib import Path

from sealmem.client.recall.dupes import THRESHOLD, signature, similarity

DATA = Path(__file__).resolve().parent / "data"


def locomo_pairs(where: Path) -> list[tuple[str, str]]:
    """Neighbouring turns of every session (the same conversation, often one subject)."""
    pairs: list[tuple[str, str]] = []
    for path in sorted(where.glob("*.json")):
        doc = json.loads(path.read_text())
        conv = doc.get("conversation", doc)
        for key, turns in conv.items():
            if not key.startswith("session_") or not isinstance(turns, list):
                continue
            texts = [t["text"] for t in turns if isinstance(t, dict) and t.get("text")]
            pairs.extend(itertools.pairwise(texts))
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser()
    default = os.environ.get("SEALMEM_LOCOMO", "/work/shared/data/locomo")
    parser.add_argument("--locomo", type=Path, default=Path(default))
    args = parser.parse_args()
    doc = json.loads((DATA / "dupes.json").read_text())
    repeats = [tuple(p) for p in doc["repeats"]]
    memories = [m for _, m in json.loads((DATA / "paraphrases.json").read_text())["pairs"]]
    distinct = {
        "same topic": [tuple(p) for p in doc["same_topic"]],
        "repeat cross pairs": list(itertools.combinations([a for a, _ in repeats], 2)),
        "paraphrase memories": list(itertools.combinations(memories, 2)),
        "locomo neighbours": locomo_pairs(args.locomo) if args.locomo.is_dir() else [],
    }

    def scores(pairs: list[tuple[str, str]]) -> list[float]:
        return [similarity(signature(a), signature(b)) for a, b in pairs]

    rep = scores(repeats)  # type: ignore[arg-type]
    dis = {name: scores(pairs) for name, pairs in distinct.items()}  # type: ignore[arg-type]
    sizes = ", ".join(f"{name} {len(p)}" for name, p in distinct.items())
    print(f"repeat pairs {len(repeats)}; distinct pairs: {sizes}")
    print(f"{'threshold':>9}  {'repeats grouped':>15}  " + "  ".join(f"{n:>19}" for n in dis))
    for t in (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7):
        hit = sum(s >= t for s in rep)
        mark = " *" if t == THRESHOLD else "  "
        cells = "  ".join(f"{sum(s >= t for s in v):>8} of {len(v):>7}" for v in dis.values())
        print(f"{t:>7.2f}{mark}  {hit:>6} of {len(rep):>3} {100 * hit / len(rep):4.0f}%  {cells}")
    missed = [(s, a, b) for s, (a, b) in zip(rep, repeats, strict=True) if s < THRESHOLD]
    for s, a, b in sorted(missed):
        print(f"  missed {s:.2f}: {a!r} / {b!r}")
    for name, pairs in distinct.items():
        for s, (a, b) in zip(dis[name], pairs, strict=True):
            if s >= THRESHOLD:
                print(f"  false ({name}) {s:.2f}: {a[:70]!r} / {b[:70]!r}")


if __name__ == "__main__":
    main()
