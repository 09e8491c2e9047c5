"""Redaction under adversarial text: every rule, every cue word, long repetitive inputs.

    python tests/bench/bench_redos.py [--size 65536] [--top 15]

Each rule (ours and the gitleaks rules) is run alone over texts built from each of its
cue words and a filler (``kw + filler*n``, ``(kw + filler)*n``, ``filler*n + kw``, ...),
first at 2,000 characters to find the slow shapes, then at ``--size``.  The baseline,
measured in the same run: :func:`redact` over prose of the same size that holds every
cue word once per sentence.  Python's ``re`` backtracks, so a rule whose cost grows
faster than the text is a way for a teammate's memory to stall every reader's pull.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sealmem.client.store.redaction import engine, gitleaks, redact
from sealmem.client.store.redaction.rules import RULES

FILLERS = [" ", "a", "A", "0", "=", "-", "_", ".", "/", "+", ":", "'", '"', "\n", "\\", "@",
           "%", "$", "{", ",", ";", "|", ">", "aA0", "a-", "a.", "a_", "a=", "= ", "0x", "a ",
           "a:", "a/", "-a", "'a", " = ", "A-", "ab12CD34"]  # fmt: skip

Runner = Callable[[str], object]


def rules() -> Iterator[tuple[str, tuple[str, ...], Runner]]:
    for rule in RULES:
        yield f"{rule.type}", rule.cues or ("",), lambda t, r=rule: list(engine._own_spans(r, t))
    for spec in gitleaks.specs()[0]:
        yield f"gitleaks:{spec.id}", spec.keywords or ("",), lambda t, s=spec: list(s.finditer(t))


def shapes(kw: str, filler: str, n: int) -> Iterator[tuple[str, str]]:
    yield "kw+f*n", (kw + filler * n)[:n]
    yield "(kw+f)*n", ((kw + filler) * n)[:n]
    yield "(kw+f*8)*n", ((kw + filler * 8) * n)[:n]
    yield "f*n+kw", filler * (n // len(filler)) + kw
    yield "kw+is+f*n", (kw + " is" + filler * n)[:n]  # the prose rules: "the token is ..."


def seconds(run: Runner, text: str) -> float:
    start = time.perf_counter()
    run(text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64 * 1024)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    cues = sorted({c for _, kws, _ in rules() for c in kws if c})
    prose = " ".join(f"the {c} of the build is kept elsewhere." for c in cues)
    prose = (prose * (args.size // len(prose) + 1))[: args.size]
    baseline = seconds(redact, prose)
    print(f"baseline: redact() over {args.size:,} characters of prose naming every cue: "
          f"{baseline * 1000:.1f} ms")  # fmt: skip
    found: list[tuple[float, str, str, str, str]] = []
    for name, kws, run in rules():
        for kw in sorted(set(kws))[:6]:
            for filler in FILLERS:
                for shape, small in shapes(kw, filler, 2000):
                    if seconds(run, small) > 0.002:
                        big = dict(shapes(kw, filler, args.size))[shape]
                        found.append((seconds(run, big), name, kw, filler, shape))
    found.sort(reverse=True)
    print(f"slowest rule runs over {args.size:,} characters (of the shapes slow at 2,000):")
    for took, name, kw, filler, shape in found[: args.top]:
        print(f"  {took * 1000:9.1f} ms  {name:40s} cue={kw!r:14s} filler={filler!r:8s} {shape}")
    worst = found[0] if found else None
    if worst is not None:
        text = dict(shapes(worst[2], worst[3], args.size))[worst[4]]
        took = seconds(redact, text)
        print(f"redact() over the slowest shape: {took * 1000:.1f} ms")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
