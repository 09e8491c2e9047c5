"""Retrieval quality on LoCoMo: sealmem recall beside a plain FTS5 BM25 baseline.

Protocol (../shared/data/README.md, LoCoMo section): one fresh store per
conversation; every turn is one memory ``"<speaker>: <text>"`` written at its
session's date-time (turn i of a session at +i seconds, so the turns keep their
order), origin ``locomo:session_<n>``; each scored question is a recall query,
its evidence turns the relevant memories; top 5.  Excluded by fixed rules:
category 5, questions without evidence, questions with an evidence entry that
is not a dia_id of the conversation.

The baseline runs in the same process over its own in-memory FTS5 table
(porter tokenizer, OR of the question's non-stop-words, NLTK stop list).
Every sealmem variant runs against the same real MemoryStore (a SQLite file
in a temporary directory) through ``MemoryStore.recall``; latency is timed
around that call (and around the baseline's SELECT).

Run:  python tests/bench/bench_locomo.py [--data PATH] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sealmem.client import MemoryStore
from sealmem.client.recall import search as retrieval
from sealmem.client.recall.ranking import RankingWeights
from sealmem.client.recall.stopwords import STOP_WORDS

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo"
FILES = ("26", "30", "41", "42", "43")
# Weights are chosen on the first half (dev); the second is held out.
HALVES = (("26", "30", "41"), ("42", "43"))
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
PROJECT = "locomo"

FULL = RankingWeights()
OFF = dataclasses.replace(
    FULL,
    coverage=0.0,
    entity_boost=1.0,
    entity=0.0,
    prefix=0.0,
    context=0.0,
    context_terms=0.0,
    date=0.0,
    recency=0.0,
    importance=0.0,
)
# Each feature alone on top of BM25, and the full ranker without it.
VARIANTS: dict[str, RankingWeights] = {
    "sealmem BM25 only": OFF,
    "+ coverage (IDF-weighted)": dataclasses.replace(OFF, coverage=FULL.coverage),
    "+ coverage + prefix words": dataclasses.replace(
        OFF, coverage=FULL.coverage, prefix=FULL.prefix
    ),
    "+ entity overlap": dataclasses.replace(OFF, entity=FULL.entity),
    "+ session context": dataclasses.replace(
        OFF, context=FULL.context, context_terms=FULL.context_terms
    ),
    "+ date expressions": dataclasses.replace(OFF, date=FULL.date),
    "+ recency + importance": dataclasses.replace(
        OFF, recency=FULL.recency, importance=FULL.importance
    ),
    "full - coverage": dataclasses.replace(FULL, coverage=0.0),
    "full - prefix words": dataclasses.replace(FULL, prefix=0.0),
    "full - entity overlap": dataclasses.replace(FULL, entity=0.0),
    "full - session context": dataclasses.replace(FULL, context=0.0, context_terms=0.0),
    "full - context terms": dataclasses.replace(FULL, context_terms=0.0),
    "full - date": dataclasses.replace(FULL, date=0.0),
    "full - recency": dataclasses.replace(FULL, recency=0.0),
    "full, wider pool (60, 20 seeds)": dataclasses.replace(FULL, pool=60, context_seeds=20),
    "full, recall.search": FULL,
    "full, via MemoryStore.recall": FULL,
}


@dataclass
class Turn:
    dia_id: str
    text: str
    at_ms: int
    session: int


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[dict[str, Any]]
    excluded: dict[str, int] = field(default_factory=dict)


@dataclass
class Outcome:
    category: int
    evidence: frozenset[str]
    top: list[str]
    seconds: float


def parse_session_time(text: str) -> int:
    moment = datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def load(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[Turn] = []
    n = 1
    while f"session_{n}_date_time" in data:
        start = parse_session_time(data[f"session_{n}_date_time"])
        for i, turn in enumerate(data.get(f"session_{n}") or ()):
            text = f"{turn['speaker']}: {turn['text']}"
            turns.append(Turn(turn["dia_id"], text, start + i * 1000, n))
        n += 1
    ids = {t.dia_id for t in turns}
    kept: list[dict[str, Any]] = []
    excluded = {"adversarial": 0, "no evidence": 0, "invalid evidence": 0}
    for qa in data["qa"]:
        if qa["category"] == 5:
            excluded["adversarial"] += 1
        elif not qa.get("evidence"):
            excluded["no evidence"] += 1
        elif any(e not in ids for e in qa["evidence"]):
            excluded["invalid evidence"] += 1
        else:
            kept.append(qa)
    return Conversation(path.stem, turns, kept, excluded)


def baseline_terms(question: str) -> list[str]:
    words = [w for w in re.findall(r"\w+", question.lower()) if w not in STOP_WORDS]
    return list(dict.fromkeys(words))


def run_baseline(conv: Conversation) -> list[Outcome]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(content, dia UNINDEXED, tokenize='porter')")
    db.executemany(
        "INSERT INTO f (content, dia) VALUES (?, ?)", [(t.text, t.dia_id) for t in conv.turns]
    )
    out: list[Outcome] = []
    for qa in conv.questions:
        match = " OR ".join(f'"{w}"' for w in baseline_terms(qa["question"]))
        start = time.perf_counter()
        rows = (
            db.execute(
                "SELECT dia FROM f WHERE f MATCH ? ORDER BY bm25(f) LIMIT 5", (match,)
            ).fetchall()
            if match
            else []
        )
        elapsed = time.perf_counter() - start
        out.append(
            Outcome(qa["category"], frozenset(qa["evidence"]), [r[0] for r in rows], elapsed)
        )
    db.close()
    return out


def build_store(conv: Conversation, where: Path) -> tuple[MemoryStore, dict[str, str], int]:
    now = [conv.turns[0].at_ms]
    store = MemoryStore.open(where / f"{conv.name}.db", author="bench", clock=lambda: now[0])
    by_id: dict[str, str] = {}
    for turn in conv.turns:
        now[0] = turn.at_ms
        result = store.remember(turn.text, project=PROJECT, origin=f"locomo:session_{turn.session}")
        by_id[result.memory.record.id] = turn.dia_id
    now[0] = conv.turns[-1].at_ms + 86_400_000  # questions are asked a day after the last session
    return store, by_id, now[0]


def run_sealmem(
    store: MemoryStore,
    by_id: dict[str, str],
    conv: Conversation,
    weights: RankingWeights | None,
    now_ms: int,
) -> list[Outcome]:
    """``weights`` None: the public ``MemoryStore.recall`` (default ranking); otherwise
    ``recall.search`` on the store's connection with those weights (the ablations)."""
    out: list[Outcome] = []
    for qa in conv.questions:
        question = qa["question"]
        start = time.perf_counter()
        if weights is None:
            ids = [h.memory.record.id for h in store.recall(question, k=5, project=PROJECT)]
        else:
            found = retrieval.search(
                store.connection, question, k=5, projects=[PROJECT], include_history=False,
                kinds=None, now_ms=now_ms, weights=weights,
            )  # fmt: skip
            ids = [s.id for s in found]
        elapsed = time.perf_counter() - start
        top = [by_id.get(i, "?") for i in ids]
        out.append(Outcome(qa["category"], frozenset(qa["evidence"]), top, elapsed))
    return out


def summarise(outcomes: Sequence[Outcome]) -> dict[str, float]:
    n = len(outcomes)
    hit = prec = rec = every = 0.0
    for o in outcomes:
        found = len(o.evidence & set(o.top[:5]))
        hit += found > 0
        prec += found / 5
        rec += found / len(o.evidence)
        every += found == len(o.evidence)
    return {
        "n": n,
        "hit": 100 * hit / n,
        "precision": 100 * prec / n,
        "recall": 100 * rec / n,
        "all": 100 * every / n,
    }


def latency(outcomes: Sequence[Outcome]) -> tuple[float, float, float]:
    ms = sorted(o.seconds * 1000 for o in outcomes)
    p95 = ms[min(len(ms) - 1, round(0.95 * len(ms)) - 1)]
    return statistics.fmean(ms), statistics.median(ms), p95


def table(title: str, rows: dict[str, list[Outcome]], show: Callable[[list[Outcome]], str]) -> None:
    print(f"\n{title}")
    for name, outcomes in rows.items():
        print(f"  {name:32s} {show(outcomes)}")


def overall(outcomes: list[Outcome]) -> str:
    s = summarise(outcomes)
    mean, median, p95 = latency(outcomes)
    return (
        f"hit {s['hit']:5.1f}  prec {s['precision']:5.1f}  recall {s['recall']:5.1f}  "
        f"all-ev {s['all']:5.1f}  | ms mean {mean:5.2f} median {median:5.2f} p95 {p95:5.2f}"
    )


def per_category(outcomes: list[Outcome]) -> str:
    parts = []
    for cat, label in CATEGORIES.items():
        s = summarise([o for o in outcomes if o.category == cat])
        parts.append(f"{label} {s['hit']:5.1f}/{s['recall']:5.1f}/{s['all']:5.1f}")
    return "  ".join(parts)


def halves(by_conv: dict[str, list[Outcome]]) -> str:
    parts = []
    for half in HALVES:
        picked = [o for name in half if name in by_conv for o in by_conv[name]]
        if picked:
            label = "dev" if half == HALVES[0] else "held-out"
            parts.append(f"{label} {'+'.join(half)}: hit {summarise(picked)['hit']:5.1f}")
    return "  ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of LoCoMo files")
    parser.add_argument("--quick", action="store_true", help="baseline and full ranker only")
    args = parser.parse_args(argv)
    missing = [f for f in FILES if not (args.data / f"{f}.json").is_file()]
    if missing:
        print(
            f"LoCoMo files {missing} not found under {args.data}; pass --data PATH", file=sys.stderr
        )
        return 2
    quick = ("full, recall.search", "full, via MemoryStore.recall")
    variants = {name: VARIANTS[name] for name in quick} if args.quick else VARIANTS
    names = ["plain FTS5 BM25 baseline", *variants]
    results: dict[str, dict[str, list[Outcome]]] = {name: {} for name in names}
    turns = sessions = 0
    excluded: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="sealmem-locomo-") as tmp:
        for name in FILES:
            conv = load(args.data / f"{name}.json")
            turns += len(conv.turns)
            sessions += len({t.session for t in conv.turns})
            for reason, count in conv.excluded.items():
                excluded[reason] = excluded.get(reason, 0) + count
            results["plain FTS5 BM25 baseline"][name] = run_baseline(conv)
            store, by_id, now_ms = build_store(conv, Path(tmp))
            with store:
                for variant, weights in variants.items():
                    chosen = None if variant.endswith("MemoryStore.recall") else weights
                    results[variant][name] = run_sealmem(store, by_id, conv, chosen, now_ms)
    merged = {name: [o for outs in per.values() for o in outs] for name, per in results.items()}
    scored = len(merged["plain FTS5 BM25 baseline"])
    print(
        f"LoCoMo: {len(FILES)} conversations, {turns} turns in {sessions} sessions, "
        f"{scored} questions scored; excluded {excluded}"
    )
    table("Top-5, macro over questions (%), recall latency (ms)", merged, overall)
    table("Per category hit/recall/all-evidence (%)", merged, per_category)
    print("\nHalves (overfitting check: weights chosen on dev), hit@5 (%)")
    for name, per in results.items():
        print(f"  {name:32s} {halves(per)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
