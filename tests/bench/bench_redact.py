"""Redaction: precision and recall on the labelled corpus, and throughput, against a baseline.

    python tests/bench/bench_redact.py [--rounds 5]                  # baseline: no gates
    python tests/bench/bench_redact.py --baseline-ref 91d13a9        # the rules before gitleaks
    python tests/bench/bench_redact.py --baseline-rules main          # our rules at a ref

The default baseline is this rule set with the rules' gates (``Rule.needs``,
``Rule.gate``) taken off: the same findings (a test holds it), the cost before the
gates.  With ``--baseline-ref`` it is the single-file rule set as it was before the
gitleaks rules came in: ``client/store/redact.py`` at that ref (``git show``), loaded
as a module of its own.  With ``--baseline-rules`` it is this engine and the gitleaks
rules with our rules (``client/store/redaction/rules.py``) as they were at a ref: what
a change of our rules costs and finds.  Each runs in this same process, side by side.

Corpus: ``tests/fixtures/redaction`` (``make_corpus.py`` writes it).  Throughput is
over memory-sized texts (about 300 characters): clean prose (the README and CHANGELOG
cut in pieces), prose that talks about keys, tokens and passwords without holding any,
and the corpus' secret lines.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sealmem.client.store.redaction import RULES_VERSION, cues, redact  # noqa: E402
from tests.fixtures.redaction import corpus  # noqa: E402


def load_baseline(ref: str) -> Callable[[str], str]:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:client/store/redact.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "baseline_redact.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("baseline_redact", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_redact"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return lambda text: str(module.redact(text).text)


def pieces(text: str, size: int = 300) -> list[str]:
    words = text.split()
    out, current = [], ""
    for word in words:
        current = f"{current} {word}" if current else word
        if len(current) >= size:
            out.append(current)
            current = ""
    return out


def throughput(fn: Callable[[str], str], texts: list[str], rounds: int) -> str:
    """MB/s and µs per text over ``rounds`` passes: the best pass, then the median one.

    On a shared machine the best pass is the one least slowed by other work."""
    size = sum(len(t.encode()) for t in texts)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for text in texts:
            fn(text)
        times.append(time.perf_counter() - start)
    best, median = min(times), statistics.median(times)
    return (
        f"{size / best / 1e6:.1f} MB/s, {best / len(texts) * 1e6:.0f} µs "
        f"(median {size / median / 1e6:.1f}, {median / len(texts) * 1e6:.0f} µs)"
    )


def rules_at(ref: str) -> tuple[object, ...]:
    """Our rules (``client/store/redaction/rules.py``) as they were at ``ref``."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{ref}:client/store/redaction/rules.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "baseline_rules.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("baseline_rules", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_rules"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return tuple(module.RULES)


@contextlib.contextmanager
def using(rules: tuple[object, ...] | None) -> Iterator[None]:
    """The engine runs ``rules`` (None: its own) inside the block: its prefilter index
    and remembered words are rebuilt on the way in and out, and a first call warms
    them before any figure is taken."""
    from sealmem.client.store.redaction import engine

    if rules is None:
        yield
        return
    own = engine.RULES

    def swap(to: tuple[object, ...]) -> None:
        engine.RULES = cues.RULES = to  # type: ignore[assignment]
        cues.cue_index.cache_clear()
        engine._plan.cache_clear()
        engine._labels.cache_clear()
        cues._WORDS.clear()
        cues._CUED.clear()
        redact("warm up: password=Warm1234 and the token is Warm1234x")

    swap(rules)
    try:
        yield
    finally:
        swap(own)


def ungated() -> Callable[[str], str]:
    """This rule set without its gates (the engine's rules swapped for the call)."""
    import dataclasses

    from sealmem.client.store.redaction import engine
    from sealmem.client.store.redaction.rules import RULES

    bare = tuple(dataclasses.replace(rule, needs=(), gate=None) for rule in RULES)

    def run(text: str) -> str:
        engine.RULES = bare  # type: ignore[misc]
        try:
            return redact(text).text
        finally:
            engine.RULES = RULES  # type: ignore[misc]

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline-ref", default=None)
    parser.add_argument("--baseline-rules", default=None, metavar="REF")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    redact("warm up: password=Warm1234 and glpat-" + "x" * 20)
    first_ms = (time.perf_counter() - start) * 1e3
    ours: Callable[[str], str] = lambda text: redact(text).text  # noqa: E731
    base_rules = None
    if args.baseline_rules is not None:
        base_rules = rules_at(args.baseline_rules)
        base = ours
        base_name = f"our rules at {args.baseline_rules}"
    elif args.baseline_ref is not None:
        base, base_name = load_baseline(args.baseline_ref), f"{args.baseline_ref}:redact.py"
    else:
        base, base_name = ungated(), "no gates"

    lines = corpus.load()
    print(f"rules: {RULES_VERSION}; baseline: {base_name}")
    print(f"corpus: {len(lines)} lines, {sum(1 for x in lines if x.family == 'clean')} negatives")
    print(f"first call (loads and indexes the gitleaks data): {first_ms:.1f} ms")
    print(f"load average: {os.getloadavg()}")
    with using(base_rules):
        baseline = corpus.score(base, lines)
    scores = {"baseline": baseline, "sealmem": corpus.score(ours, lines)}
    print("\n| family | lines | baseline recall | sealmem recall |")
    print("|---|---|---|---|")
    for family in sorted(scores["sealmem"].total):
        if family == "clean":
            continue
        b, s = scores["baseline"], scores["sealmem"]
        print(f"| {family} | {s.total[family]} | {b.recall(family):.0%} | {s.recall(family):.0%} |")
    for name, score in scores.items():
        print(
            f"| **{name} overall** | | recall {score.recall():.1%} | precision "
            f"{score.precision():.1%} ({len(score.false_positives)} false positives) |"
        )
    for line in scores["sealmem"].missed:
        print(f"  sealmem misses ({line.family}): {line.text[:80]!r}")
    for text in scores["sealmem"].false_positives:
        print(f"  sealmem false positive: {text[:80]!r}")

    prose = pieces((ROOT / "README.md").read_text() + (ROOT / "CHANGELOG.md").read_text())
    talk = [
        t.replace("memory", "API key").replace("member", "token").replace("store", "password")
        for t in prose
    ]
    secrets = [x.text for x in lines if x.family != "clean"]
    print(f"\nthroughput over {args.rounds} rounds (MB/s, µs per text); load {os.getloadavg()}")
    print("| texts | count | baseline | sealmem |")
    print("|---|---|---|---|")
    for label, texts in [
        ("clean prose", prose),
        ("prose naming keys/tokens/passwords", talk),
        ("corpus secret lines", secrets),
    ]:
        with using(base_rules):
            before = throughput(base, texts, args.rounds)
        print(f"| {label} | {len(texts)} | {before} | {throughput(ours, texts, args.rounds)} |")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
