"""Retrieval quality on LoCoMo: sealmem recall beside a plain FTS5 BM25 baseline.

Protocol (../shared/data/README.md, LoCoMo section): one fresh store per
conversation; every turn is one memory ``"<speaker>: <text>"`` written at its
session's date-time (turn i of a session at +i seconds, so the turns keep their
order) by its speaker (member id: the name, lower-cased), origin
``locomo:session_<n>``; each scored question is a recall query,
its evidence turns the relevant memories; top 5.  Excluded by fixed rules:
category 5, questions without evidence, questions with an evidence entry that
is not a dia_id of the conversation.

What it prints:

- **Cold latency**, through the public ``MemoryStore.recall``: for each
  conversation a fresh Python process opens the store and asks every question
  once (no warm-up pass, no question asked twice; recall's caches start empty),
  timing each call; mean, median and p95 over all questions, with the load
  average beside them.
- **Leave-one-conversation-out (LOO)**: the weights are chosen by
  :func:`tune` (steepest coordinate ascent over a few weights, :data:`GRID`,
  starting from every weight at its smallest grid value) on four conversations
  and scored on the fifth; the LOO figure is the mean of the five held-out
  scores.  The **all-five** figure is the default weights scored on all five
  conversations: the defaults are what :func:`tune` picks on all five, so that
  figure is not held out.  ``--tune`` prints that choice.
- **No session ids**: the same, with every memory's origin the constant ``cli``
  (what a write path without a session id stores), so session context comes
  only from the time-gap rule (``RankingWeights.session_gap_ms``), which links a
  speaker's own turns only (same author).  With one author for every turn, as
  before, this figure equalled the session figure exactly: LoCoMo sessions are at
  least 28 hours apart and turns 1 s apart, so every gap from 2 s to 28 h finds
  exactly the session's turns.
- **Related** results per query (matching nothing, after the matches; at most 2).
- **No answer in the store** (:func:`no_answer_set`): each conversation's questions
  asked of the next conversation's store, and again with their speakers renamed to
  that store's (:func:`renamed`); the share that returns nothing.
- ``--baseline-src DIR`` (a source tree of the code before) answers the same cold
  questions with that code, beside this tree's.
- An ablation table (each feature alone, the full ranker without it) through
  ``recall.search`` on the same store; quality only (those calls are warm).

The baseline runs in the same process over its own in-memory FTS5 table
(porter tokenizer, OR of the question's non-stop-words, NLTK stop list).

Run:  python tests/bench/bench_locomo.py [--data PATH] [--quick] [--no-loo] [--baseline-src DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = Path(os.environ.get("SEALMEM_LOCOMO", "/work/shared/data/locomo"))
FILES = ("26", "30", "41", "42", "43")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
PROJECT = "locomo"
AUTHOR = "bench"
CONSTANT_ORIGIN = "cli"

# The weights the coordinate search may move, and the values it tries for each: three
# (coverage, session context, dates).  The others stay at their defaults: recency (every
# LoCoMo turn is days to years old and equally important, so it only breaks ties) and
# prefix credit (for agent stores: "postgres" -> "PostgreSQL"), which LoCoMo cannot tell
# apart, and entity, context terms and the answer to a question, which every fold left at
# their defaults once the three were free (leave-one-out 76.8 with the three, beside 76.9
# all-five; the six before the matching rule: 76.6): fewer knobs fitted to five conversations.
GRID: dict[str, tuple[float, ...]] = {
    "coverage": (0.5, 1.0, 1.5),
    "context": (0.4, 0.8, 1.2),
    "date": (0.0, 0.3, 0.6, 0.9),
}
# The time-gap rule's gap (ms), chosen the same way on the no-session stores.
GAP_GRID: tuple[int, ...] = (60_000, 600_000, 1_800_000, 3_600_000, 6 * 3_600_000, 86_400_000)


@dataclass
class Turn:
    dia_id: str
    text: str
    at_ms: int
    session: int
    speaker: str = ""


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
    seconds: float = 0.0
    related: int = 0  # results marked related (after the matches)

    @property
    def hit(self) -> bool:
        """An evidence turn among what the agent is shown: the five best matches and
        the (at most two) related results after them."""
        return bool(self.evidence & set(self.top))


@dataclass
class Built:
    """One conversation's store on disk, and how to read its answers."""

    conv: Conversation
    path: Path
    by_id: dict[str, str]
    now_ms: int


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
            turns.append(Turn(turn["dia_id"], text, start + i * 1000, n, turn["speaker"]))
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


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


# -- the baseline ------------------------------------------------------------------


def baseline_terms(question: str) -> list[str]:
    from sealmem.client.recall.stopwords import STOP_WORDS

    words = [w for w in re.findall(r"\w+", question.lower()) if w not in STOP_WORDS]
    return list(dict.fromkeys(words))


def run_baseline(
    conv: Conversation, asked: Sequence[dict[str, Any]] | None = None
) -> list[Outcome]:
    """The plain FTS5 baseline over ``conv``'s turns, asked ``asked`` (default: its own)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(content, dia UNINDEXED, tokenize='porter')")
    db.executemany(
        "INSERT INTO f (content, dia) VALUES (?, ?)", [(t.text, t.dia_id) for t in conv.turns]
    )
    out: list[Outcome] = []
    for qa in conv.questions if asked is None else asked:
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


# -- stores --------------------------------------------------------------------------


def author_of(turn: Turn) -> str:
    """The member id that writes a turn: its speaker's name, folded to a member id."""
    return re.sub(r"[^a-z0-9_.-]", "-", turn.speaker.lower())[:64] or AUTHOR


def build_store(conv: Conversation, where: Path, *, sessions: bool) -> Built:
    """The conversation as a store file, each turn written by its speaker (two members
    writing their own memories); ``sessions`` False writes every turn with the constant
    origin ``cli`` (no session ids at all), so that only the time-gap rule links turns,
    and it links a speaker's own turns only (same author)."""
    from sealmem.client import MemoryStore

    now = [conv.turns[0].at_ms]
    suffix = "sessions" if sessions else "constant"
    path = where / f"{conv.name}-{suffix}.db"
    stores = {
        author: MemoryStore.open(path, author=author, clock=lambda: now[0])
        for author in dict.fromkeys(author_of(t) for t in conv.turns)
    }
    by_id: dict[str, str] = {}
    try:
        for turn in conv.turns:
            now[0] = turn.at_ms
            origin = f"locomo:session_{turn.session}" if sessions else CONSTANT_ORIGIN
            result = stores[author_of(turn)].remember(turn.text, project=PROJECT, origin=origin)
            by_id[result.memory.record.id] = turn.dia_id
        next(iter(stores.values())).connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        for store in stores.values():
            store.close()
    # questions are asked a day after the last session
    return Built(conv, path, by_id, conv.turns[-1].at_ms + 86_400_000)


def cold_child(path: Path, now_ms: int) -> int:
    """In a fresh process: every question (one per stdin line) asked once through
    ``MemoryStore.recall``; prints ``[[ids], seconds]`` per question as JSON."""
    from sealmem.client import MemoryStore
    from sealmem.client.recall import search as _search  # noqa: F401  (import, not a cache)

    questions = [json.loads(line) for line in sys.stdin if line.strip()]
    out = []
    with MemoryStore.open(path, author=AUTHOR, clock=lambda: now_ms) as store:
        for question in questions:
            start = time.perf_counter()
            hits = store.recall(question, k=5, project=PROJECT)
            elapsed = time.perf_counter() - start
            related = sum(bool(getattr(h, "related", False)) for h in hits)  # main has none
            out.append([[h.memory.record.id for h in hits], elapsed, related])
    json.dump(out, sys.stdout)
    return 0


def run_cold(
    built: Built, asked: Sequence[dict[str, Any]] | None = None, src: Path | None = None
) -> list[Outcome]:
    """Every question of ``asked`` (default: the conversation's own) in a fresh process;
    with ``src`` (a source tree, see ``--baseline-src``) that tree's code answers."""
    asked = built.conv.questions if asked is None else asked
    questions = "\n".join(json.dumps(qa["question"]) for qa in asked)
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = f"{src}/.sealmem-ns{os.pathsep}{src}"
    done = subprocess.run(
        [sys.executable, __file__, "--cold-child", str(built.path), str(built.now_ms)],
        input=questions,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    answers = json.loads(done.stdout)
    return [
        Outcome(
            qa["category"],
            frozenset(qa["evidence"]),
            [built.by_id.get(i, "?") for i in ids],
            seconds,
            related,
        )
        for qa, (ids, seconds, related) in zip(asked, answers, strict=True)
    ]


def namespace(src: Path) -> Path:
    """``src`` (a tree of client/, hub/, crypto/, protocol/) importable as ``sealmem``: a
    ``.sealmem-ns/sealmem`` folder of symlinks beside it."""
    ns = src / ".sealmem-ns" / "sealmem"
    ns.mkdir(parents=True, exist_ok=True)
    for part in ("client", "hub", "crypto", "protocol"):
        if not (ns / part).exists():
            (ns / part).symlink_to(src / part)
    return src


def no_answer_set(convs: Sequence[Conversation]) -> list[tuple[int, list[dict[str, Any]]]]:
    """Questions with no answer in the store they are asked of: each conversation's
    scored questions asked of the next conversation's store (``(store index,
    questions)``), keeping those that share no evidence with it: neither the answer
    (case-folded, 3 characters or more) nor the text of an evidence turn (after its
    speaker) occurs in any of that store's turns."""
    out = []
    for i, conv in enumerate(convs):
        target = convs[(i + 1) % len(convs)]
        texts = [t.text.lower() for t in target.turns]
        said = {t.dia_id: t.text.split(": ", 1)[-1].lower() for t in conv.turns}
        kept = []
        for qa in conv.questions:
            answer = str(qa.get("answer", "")).lower().strip()
            clues = [said[e] for e in qa["evidence"]]
            if len(answer) >= 3:
                clues.append(answer)
            if not any(clue in text for clue in clues for text in texts):
                kept.append(qa)
        out.append(((i + 1) % len(convs), kept))
    return out


def speakers(conv: Conversation) -> list[str]:
    return list(dict.fromkeys(t.speaker for t in conv.turns))


def renamed(
    convs: Sequence[Conversation], unanswerable: list[tuple[int, list[dict[str, Any]]]]
) -> list[tuple[int, list[dict[str, Any]]]]:
    """The no-answer set with the asking conversation's speakers renamed to the store's
    (first speaker to first, second to second, whole words): the same questions about
    people the store knows, so that no name gives them away."""
    out = []
    for i, (j, questions) in enumerate(unanswerable):
        pairs = list(zip(speakers(convs[i]), speakers(convs[j]), strict=False))
        moved = []
        for qa in questions:
            text = qa["question"]
            for old, new in pairs:
                text = re.sub(rf"\b{re.escape(old)}\b", new, text)
            moved.append({**qa, "question": text})
        out.append((j, moved))
    return out


class Evaluator:
    """``recall.search`` with given weights over the stores, hits cached per
    (conversation, weights): the tuning asks the same point again and again."""

    def __init__(self, built: dict[str, Built]) -> None:
        from sealmem.client import MemoryStore

        self.built = built
        self.stores = {
            name: MemoryStore.open(b.path, author=AUTHOR, clock=lambda: 0)
            for name, b in built.items()
        }
        self.cache: dict[tuple[str, Any], list[Outcome]] = {}

    def close(self) -> None:
        for store in self.stores.values():
            store.close()

    def outcomes(self, name: str, weights: Any) -> list[Outcome]:
        from sealmem.client.recall import search as retrieval

        key = (name, weights)
        if key not in self.cache:
            built, conn = self.built[name], self.stores[name].connection
            out = []
            for qa in built.conv.questions:
                found = retrieval.search(
                    conn, qa["question"], k=5, projects=[PROJECT], include_history=False,
                    kinds=None, now_ms=built.now_ms, weights=weights,
                )  # fmt: skip
                top = [built.by_id.get(s.id, "?") for s in found]
                out.append(Outcome(qa["category"], frozenset(qa["evidence"]), top))
            self.cache[key] = out
        return self.cache[key]

    def hits(self, names: Iterable[str], weights: Any) -> int:
        return sum(o.hit for name in names for o in self.outcomes(name, weights))


def tune(
    evaluator: Evaluator,
    names: Sequence[str],
    start: Any,
    grid: dict[str, Sequence[float]],
    rounds: int = 4,
) -> Any:
    """Steepest coordinate ascent: each round tries every single-weight change the grid
    allows and takes the one that adds the most hits@5 on ``names`` (ties: the earlier
    weight in the grid, the smaller value); it stops when no change adds a hit, or
    after ``rounds`` changes.  This is how the defaults are chosen."""
    best, score = start, evaluator.hits(names, start)
    for _ in range(rounds):
        move, gained = best, score
        for weight, values in grid.items():
            for value in sorted(values):
                candidate = dataclasses.replace(best, **{weight: value})
                if candidate == best:
                    continue
                hits = evaluator.hits(names, candidate)
                if hits > gained:
                    move, gained = candidate, hits
        if move == best:
            break
        best, score = move, gained
    return best


def lowest(weights: Any, grid: dict[str, Sequence[float]]) -> Any:
    """``weights`` with every weight of the grid at its smallest value: where the search
    starts in leave-one-out, so that nothing chosen on the held-out file leaks in."""
    return dataclasses.replace(weights, **{name: min(values) for name, values in grid.items()})


def leave_one_out(
    evaluator: Evaluator, start: Any, grid: dict[str, Sequence[float]]
) -> list[tuple[str, Any, float]]:
    """(held-out conversation, weights chosen on the other four, held-out hit@5 %)."""
    out = []
    names = list(evaluator.built)
    for held in names:
        chosen = tune(evaluator, [n for n in names if n != held], start, grid, rounds=8)
        outcomes = evaluator.outcomes(held, chosen)
        out.append((held, chosen, 100 * sum(o.hit for o in outcomes) / len(outcomes)))
    return out


# -- reporting -----------------------------------------------------------------------


def summarise(outcomes: Sequence[Outcome]) -> dict[str, float]:
    n = len(outcomes)
    hit = prec = rec = every = first = 0.0
    for o in outcomes:
        found = len(o.evidence & set(o.top))
        hit += found > 0
        first += bool(o.evidence & set(o.top[:5]))
        prec += found / max(5, len(o.top))
        rec += found / len(o.evidence)
        every += found == len(o.evidence)
    return {
        "n": n,
        "hit": 100 * hit / n,
        "first5": 100 * first / n,
        "precision": 100 * prec / n,
        "recall": 100 * rec / n,
        "all": 100 * every / n,
    }


def latency(outcomes: Sequence[Outcome]) -> tuple[float, float, float]:
    ms = sorted(o.seconds * 1000 for o in outcomes)
    p95 = ms[min(len(ms) - 1, round(0.95 * len(ms)) - 1)]
    return statistics.fmean(ms), statistics.median(ms), p95


def quality(outcomes: list[Outcome]) -> str:
    s = summarise(outcomes)
    return (
        f"hit {s['hit']:5.1f} (first five {s['first5']:5.1f})  prec {s['precision']:5.1f}  "
        f"recall {s['recall']:5.1f}  all-ev {s['all']:5.1f}"
    )


def timed(outcomes: list[Outcome]) -> str:
    mean, median, p95 = latency(outcomes)
    return f"{quality(outcomes)}  | ms mean {mean:5.2f} median {median:5.2f} p95 {p95:5.2f}"


def per_category(outcomes: list[Outcome]) -> str:
    parts = []
    for cat, label in CATEGORIES.items():
        s = summarise([o for o in outcomes if o.category == cat])
        parts.append(f"{label} {s['hit']:5.1f}/{s['recall']:5.1f}/{s['all']:5.1f}")
    return "  ".join(parts)


def per_conversation(by_conv: dict[str, list[Outcome]]) -> str:
    scores = [summarise(o)["hit"] for o in by_conv.values()]
    each = "  ".join(f"{n} {h:5.1f}" for n, h in zip(by_conv, scores, strict=True))
    return f"{each}  | {spread(scores)}"


def spread(scores: Sequence[float]) -> str:
    """The spread of per-conversation figures: lowest, highest, standard deviation."""
    sd = statistics.pstdev(scores) if len(scores) > 1 else 0.0
    return f"min {min(scores):5.1f} max {max(scores):5.1f} sd {sd:4.1f}"


def related_line(outcomes: Sequence[Outcome]) -> str:
    counts = [o.related for o in outcomes]
    with_any = sum(c > 0 for c in counts)
    return (
        f"related per query mean {statistics.fmean(counts):4.2f} max {max(counts)}; "
        f"queries with any {100 * with_any / len(counts):5.1f} %"
    )


def empty_line(outcomes: Sequence[Outcome]) -> str:
    sizes = [len(o.top) for o in outcomes]
    empty = sum(n == 0 for n in sizes)
    return (
        f"empty {100 * empty / len(sizes):5.1f} % ({empty}/{len(sizes)}), "
        f"results per query {statistics.fmean(sizes):4.2f}"
    )


def table(title: str, rows: dict[str, list[Outcome]], show: Callable[[list[Outcome]], str]) -> None:
    print(f"\n{title}")
    for name, outcomes in rows.items():
        print(f"  {name:34s} {show(outcomes)}")


def changed_weights(weights: Any, default: Any) -> str:
    diff = [
        f"{f.name}={getattr(weights, f.name)}"
        for f in dataclasses.fields(weights)
        if getattr(weights, f.name) != getattr(default, f.name)
    ]
    return ", ".join(diff) or "the defaults"


def variants(full: Any) -> dict[str, Any]:
    off = dataclasses.replace(
        full, coverage=0.0, entity=0.0, prefix=0.0, context=0.0, context_terms=0.0,
        context_question=0.0, date=0.0, recency=0.0, importance=0.0,
    )  # fmt: skip
    return {
        "sealmem BM25 only": off,
        "+ coverage": dataclasses.replace(off, coverage=full.coverage),
        "+ coverage + prefix words": dataclasses.replace(
            off, coverage=full.coverage, prefix=full.prefix
        ),
        "+ entity overlap": dataclasses.replace(off, entity=full.entity),
        "+ session context": dataclasses.replace(
            off,
            context=full.context,
            context_terms=full.context_terms,
            context_question=full.context_question,
        ),
        "+ date expressions": dataclasses.replace(off, date=full.date),
        "full - coverage": dataclasses.replace(full, coverage=0.0),
        "full - prefix words": dataclasses.replace(full, prefix=0.0),
        "full - entity overlap": dataclasses.replace(full, entity=0.0),
        "full - session context": dataclasses.replace(
            full, context=0.0, context_terms=0.0, context_question=0.0
        ),
        "full - context terms": dataclasses.replace(full, context_terms=0.0),
        "full - answer to a question": dataclasses.replace(full, context_question=0.0),
        "full - date": dataclasses.replace(full, date=0.0),
        "full - recency": dataclasses.replace(full, recency=0.0),
        "full (default)": full,
    }


def report_loo(
    label: str, evaluator: Evaluator, default: Any, grid: dict[str, Any]
) -> tuple[float, float]:
    """Prints the folds; returns (LOO mean, all-five hit@5 at the defaults)."""
    folds = leave_one_out(evaluator, lowest(default, grid), grid)
    print(f"\nLeave-one-conversation-out, {label} (weights tuned on the other four)")
    for held, chosen, score in folds:
        print(f"  held out {held}: hit@5 {score:5.1f}  chosen: {changed_weights(chosen, default)}")
    n_questions = {n: len(b.conv.questions) for n, b in evaluator.built.items()}
    pooled = sum(s * n_questions[h] for h, _, s in folds) / sum(n_questions.values())
    mean = statistics.fmean(s for _, _, s in folds)
    every = 100 * evaluator.hits(evaluator.built, default) / sum(n_questions.values())
    print(
        f"  LOO mean hit@5 {mean:5.1f} (pooled over questions {pooled:5.1f}) beside "
        f"all-five at the defaults {every:5.1f}; folds {spread([s for _, _, s in folds])}"
    )
    return mean, every


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of LoCoMo files")
    parser.add_argument("--quick", action="store_true", help="no ablation table")
    parser.add_argument("--no-loo", action="store_true", help="no leave-one-out tuning")
    parser.add_argument(
        "--tune", action="store_true", help="also print the weights tune() picks on all five"
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="a source tree of the code before (e.g. `git archive main` unpacked): its "
        "recall answers the same stores, cold, beside this tree's",
    )
    parser.add_argument("--cold-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cold_child:
        return cold_child(Path(args.cold_child[0]), int(args.cold_child[1]))
    from sealmem.client.recall.ranking import RankingWeights

    missing = [f for f in FILES if not (args.data / f"{f}.json").is_file()]
    if missing:
        print(
            f"LoCoMo files {missing} not found under {args.data}; pass --data PATH", file=sys.stderr
        )
        return 2
    full = RankingWeights()
    convs = [load(args.data / f"{name}.json") for name in FILES]
    excluded: dict[str, int] = {}
    for conv in convs:
        for reason, count in conv.excluded.items():
            excluded[reason] = excluded.get(reason, 0) + count
    print(
        f"LoCoMo: {len(convs)} conversations, {sum(len(c.turns) for c in convs)} turns in "
        f"{sum(len({t.session for t in c.turns}) for c in convs)} sessions, "
        f"{sum(len(c.questions) for c in convs)} questions scored; excluded {excluded}"
    )
    with tempfile.TemporaryDirectory(prefix="sealmem-locomo-") as tmp:
        where = Path(tmp)
        with_sessions = {c.name: build_store(c, where, sessions=True) for c in convs}
        constant = {c.name: build_store(c, where, sessions=False) for c in convs}
        base = namespace(args.baseline_src.resolve()) if args.baseline_src else None
        print(f"\nCold latency, one fresh process per conversation ({load_average()} before)")
        cold: dict[str, dict[str, list[Outcome]]] = {
            "plain FTS5 BM25 baseline": {c.name: run_baseline(c) for c in convs},
        }
        if base is not None:
            cold["before: recall, sessions"] = {
                n: run_cold(b, src=base) for n, b in with_sessions.items()
            }
            cold["before: recall, no session ids"] = {
                n: run_cold(b, src=base) for n, b in constant.items()
            }
        cold["MemoryStore.recall, sessions"] = {n: run_cold(b) for n, b in with_sessions.items()}
        cold["MemoryStore.recall, no session ids"] = {n: run_cold(b) for n, b in constant.items()}
        merged = {name: [o for outs in per.values() for o in outs] for name, per in cold.items()}
        table("All five, default weights (%); cold latency (ms)", merged, timed)
        print(f"  ({load_average()} after)")
        table(
            "Related results (this tree)",
            {n: merged[n] for n in merged if "recall" in n},
            related_line,
        )
        unanswerable = no_answer_set(convs)
        n_asked = sum(len(qs) for _, qs in unanswerable)
        print(
            f"\nNo answer in the store: each conversation's questions asked of the next one's "
            f"store, {n_asked} kept of {sum(len(c.questions) for c in convs)} (answer or "
            "evidence text found there: dropped)"
        )
        asked_of = list(with_sessions.values())
        nothing: dict[str, list[Outcome]] = {
            "plain FTS5 BM25 baseline": [
                o for i, qs in unanswerable for o in run_baseline(convs[i], qs)
            ],
        }
        if base is not None:
            nothing["before: recall, sessions"] = [
                o for i, qs in unanswerable for o in run_cold(asked_of[i], qs, src=base)
            ]
        nothing["MemoryStore.recall, sessions"] = [
            o for i, qs in unanswerable for o in run_cold(asked_of[i], qs)
        ]
        for name, outcomes in nothing.items():
            print(f"  {name:34s} {empty_line(outcomes)}")
        print("  ... the same questions, their speakers renamed to the store's speakers")
        swapped = renamed(convs, unanswerable)
        hard: dict[str, list[Outcome]] = {
            "plain FTS5 BM25 baseline": [
                o for i, qs in swapped for o in run_baseline(convs[i], qs)
            ],
        }
        if base is not None:
            hard["before: recall, sessions"] = [
                o for i, qs in swapped for o in run_cold(asked_of[i], qs, src=base)
            ]
        hard["MemoryStore.recall, sessions"] = [
            o for i, qs in swapped for o in run_cold(asked_of[i], qs)
        ]
        for name, outcomes in hard.items():
            print(f"  {name:34s} {empty_line(outcomes)}")
        table("Per category hit/recall/all-evidence (%)", merged, per_category)
        print("\nPer conversation hit@5 (%)")
        for name, per in cold.items():
            print(f"  {name:34s} {per_conversation(per)}")
        evaluator = Evaluator(with_sessions)
        try:
            if not args.quick:
                rows = {
                    name: [o for n in with_sessions for o in evaluator.outcomes(n, weights)]
                    for name, weights in variants(full).items()
                }
                table("Ablation through recall.search, all five (%)", rows, quality)
            if args.tune:
                chosen = tune(evaluator, list(with_sessions), lowest(full, GRID), GRID, rounds=8)
                hit = (
                    100
                    * evaluator.hits(with_sessions, chosen)
                    / len(merged["plain FTS5 BM25 baseline"])
                )
                print(f"\ntune() on all five: {changed_weights(chosen, full)} (hit@5 {hit:5.1f})")
            if not args.no_loo:
                report_loo("origins carry sessions", evaluator, full, GRID)
        finally:
            evaluator.close()
        if not args.no_loo and hasattr(full, "session_gap_ms"):
            evaluator = Evaluator(constant)
            try:
                report_loo(
                    "no session ids (origin 'cli'), time-gap rule",
                    evaluator,
                    full,
                    {**GRID, "session_gap_ms": GAP_GRID},
                )
            finally:
                evaluator.close()
    print(f"\n({load_average()} at the end)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
