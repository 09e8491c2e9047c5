"""Cold recall latency on a large synthetic store, through ``MemoryStore.recall``.

The store is built as ``bench_scale.py`` builds it (fixed seed, Zipf vocabulary of
5,000 made-up words, notes of 8-40 words with 3 keywords, written through
``MemoryStore.remember`` one minute apart, 50 notes per session), except that every
other block of 50 has no session id (origin ``cli``), so the time-gap rule runs
too.  Then a fresh Python process opens the store and asks each of the generated
2-5-word queries once (no warm-up, no query twice), timing each call; a plain FTS5
BM25 query (OR of the same words, top 5) is timed beside it in the same process.

``--store-cache DIR`` keeps the built store (and its queries) in ``DIR`` and reuses
it on the next run with the same size and query count; each child opens a fresh copy,
so every child is cold the same way (a fresh Python process and a fresh SQLite
connection; the OS page cache is not dropped, in any mode).  Each source tree opens
its own copy once before any child is timed, so its schema migrations are not timed.

``--baseline-src DIR`` runs the same child with another source tree (a checkout of
the repository, e.g. ``git archive main | tar -x -C DIR``) imported instead of this
one, ``--runs`` times each, interleaved (baseline, this tree, baseline, ...), and
prints both with the load average of each run.  Each tree builds its own store from
the same seeded texts and clock (a store of an older schema may not open in a newer
tree), cached as ``cold-<size>-<queries>.db`` and ``cold-<size>-<queries>-base.db``.
``--profile FILE`` writes a cProfile of the timed calls of this tree's (last) child.
Beside the wall-clock figures each child reports the CPU time of its recall calls
(``time.process_time``): on a shared machine it leaves out the time the process
waited for a core.

``--single N`` also asks the first ``N`` queries one per fresh process each (a fresh
copy of the store too), after each run, for every tree: the first recall of a
process, which is what the CLI and every hook run pays.

Run:  python tests/bench/bench_recall_cold.py [--size 100000] [--queries 200]
          [--store-cache DIR] [--baseline-src DIR] [--runs 3] [--profile FILE]
          [--single 40]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import MINUTE_MS, SEED, START_MS, Generator, percentile

PROJECT = "bench"
_HERE = Path(__file__).resolve().parents[2]
_PACKAGES = ("client", "hub", "crypto", "protocol")


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


def child(path: Path, now_ms: int, profile: str | None) -> int:
    from sealmem.client import MemoryStore
    from sealmem.client.recall import search as _search

    texts = [json.loads(line) for line in sys.stdin if line.strip()]
    recall_ms: list[float] = []
    plain_ms: list[float] = []
    cpu_ms: list[float] = []
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    with MemoryStore.open(path, author="bench", clock=lambda: now_ms) as store:
        for text in texts:
            if profiler:
                profiler.enable()
            start, cpu = time.perf_counter(), time.process_time()
            store.recall(text, k=5, project=PROJECT)
            recall_ms.append((time.perf_counter() - start) * 1000)
            cpu_ms.append((time.process_time() - cpu) * 1000)
            if profiler:
                profiler.disable()
            match = " OR ".join(f'"{w}"' for w in text.split())
            start = time.perf_counter()
            store.connection.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT 5",
                (match,),
            ).fetchall()
            plain_ms.append((time.perf_counter() - start) * 1000)
    if profiler and profile:
        profiler.dump_stats(profile)
    json.dump(
        {"recall": recall_ms, "cpu": cpu_ms, "plain": plain_ms, "source": _search.__file__},
        sys.stdout,
    )
    return 0


def figures(ms: Sequence[float]) -> str:
    return (
        f"mean {statistics.fmean(ms):6.2f}  median {statistics.median(ms):6.2f}  "
        f"p95 {percentile(ms, 0.95):6.2f}"
    )


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _stored(
    cache: Path | None, tmp: Path, size: int, queries: int, builder: Tree
) -> tuple[Path, list[str], int]:
    """The built store and its queries: from ``cache`` when it holds them, else built
    (into ``cache`` when given) in a child running the source tree ``builder``."""
    where = cache or tmp
    where.mkdir(parents=True, exist_ok=True)
    suffix = "" if builder.path_dir is None else "-base"  # built by the baseline
    path = where / f"cold-{size}-{queries}{suffix}.db"
    meta = path.with_suffix(".json")
    if cache is None or not (path.exists() and meta.exists()):
        for stale in (path, meta):
            stale.unlink(missing_ok=True)
        started = time.perf_counter()
        command = [sys.executable, __file__, "--build", str(path), str(size), str(queries)]
        subprocess.run(command, check=True, env=builder.env())
        print(f"built {size:,} memories in {time.perf_counter() - started:.0f} s (load {_load()})")
    else:
        print(f"reusing {size:,} memories from {path}")
    saved = json.loads(meta.read_text())
    return path, saved["texts"], int(saved["now_ms"])


def _shim(src: Path, tmp: Path) -> Path:
    """A directory that makes ``import sealmem`` load the source tree ``src``."""
    if not (src / "client" / "recall" / "search.py").exists():
        raise SystemExit(f"--baseline-src {src}: no client/recall/search.py there; pass a checkout")
    package = tmp / "baseline" / "sealmem"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in _PACKAGES:
        (package / name).symlink_to((src / name).resolve(), target_is_directory=True)
    return package.parent


@dataclass
class Tree:
    """A source tree to time: its label, the directory put first on ``PYTHONPATH``
    (None: this checkout) and its copy of the store, opened once by that tree (so that
    its migrations ran before any child is timed)."""

    label: str
    path_dir: Path | None
    store: Path

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.path_dir is not None:
            env["PYTHONPATH"] = os.pathsep.join(
                filter(None, [str(self.path_dir), env.get("PYTHONPATH")])
            )
        return env


def _copy(store: Path, to: Path) -> None:
    shutil.rmtree(to.parent, ignore_errors=True)
    to.parent.mkdir(parents=True)
    shutil.copyfile(store, to)
    wal = store.with_name(store.name + "-wal")
    if wal.exists():  # the builder checkpoints and closes, so normally none
        shutil.copyfile(wal, to.with_name(to.name + "-wal"))


def _prepare(tree: Tree, built: Path) -> None:
    _copy(built, tree.store)
    command = [sys.executable, __file__, "--prepare", str(tree.store)]
    subprocess.run(command, check=True, env=tree.env())


def prepare(path: Path) -> int:
    """Open the store once (its migrations run) and close it."""
    from sealmem.client import MemoryStore

    MemoryStore.open(path, author="bench").close()
    return 0


@dataclass
class Timed:
    recall: list[float]
    cpu: list[float]  # the process's CPU time in each recall call (preemption left out)
    plain: list[float]
    load: str


def _run_child(tree: Tree, now_ms: int, texts: list[str], tmp: Path, profile: str | None) -> Timed:
    copy = tmp / "child" / "store.db"
    _copy(tree.store, copy)
    command = [sys.executable, __file__, "--child", str(copy), str(now_ms)]
    if profile:
        command += ["--profile", profile]
    before = _load()
    done = subprocess.run(
        command,
        input="\n".join(json.dumps(t) for t in texts),
        capture_output=True,
        text=True,
        check=True,
        env=tree.env(),
    )
    result = json.loads(done.stdout)
    expected = str(tree.path_dir) if tree.path_dir is not None else str(_HERE)
    if not str(result["source"]).startswith(expected):
        raise SystemExit(f"the {tree.label} child imported {result['source']}, not {expected}")
    return Timed(result["recall"], result["cpu"], result["plain"], f"{before} -> {_load()}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--store-cache", type=Path, help="build the store once, keep it here")
    parser.add_argument("--baseline-src", type=Path, help="a source tree to compare with")
    parser.add_argument("--runs", type=int, default=1, help="children per source tree")
    parser.add_argument("--profile", help="cProfile of this tree's timed calls, to this file")
    parser.add_argument(
        "--single",
        type=int,
        default=0,
        help="also ask the first N queries one per fresh process (the CLI's and hooks' case)",
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    parser.add_argument("--build", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(Path(args.child[0]), int(args.child[1]), args.profile)
    if args.prepare:
        return prepare(Path(args.prepare))
    if args.build:
        path = Path(args.build[0])
        texts, now_ms = build(path, int(args.build[1]), int(args.build[2]))
        path.with_suffix(".json").write_text(json.dumps({"texts": texts, "now_ms": now_ms}))
        return 0
    with tempfile.TemporaryDirectory(prefix="sealmem-cold-") as name:
        tmp = Path(name)
        here = Tree("this tree", None, tmp / "here" / "store.db")
        base = None
        if args.baseline_src is not None:
            shim = _shim(args.baseline_src, tmp)
            base = Tree(f"baseline {args.baseline_src}", shim, tmp / "base" / "store.db")
        # each tree builds its own store from the same seeded texts and clock: a store of
        # an older schema may not open in this tree (the v1 baseline refuses pre-release
        # stores), so neither opens the other's
        trees = [tree for tree in (base, here) if tree is not None]
        for tree in trees:
            built, texts, now_ms = _stored(args.store_cache, tmp, args.size, args.queries, tree)
            _prepare(tree, built)
        for run in range(args.runs):
            for tree in trees:
                profile = args.profile if tree.path_dir is None else None
                timed = _run_child(tree, now_ms, texts, tmp, profile)
                print(
                    f"run {run + 1}, {tree.label}: {args.queries} queries, each once, fresh "
                    f"process (load average {timed.load})"
                )
                print(f"  MemoryStore.recall  ms {figures(timed.recall)}")
                print(f"    its CPU time      ms {figures(timed.cpu)}")
                print(f"  plain FTS5 BM25     ms {figures(timed.plain)}")
            for tree in trees if args.single else []:
                alone = _run_alone(tree, now_ms, texts[: args.single], tmp)
                print(
                    f"run {run + 1}, {tree.label}: {len(alone.recall)} queries, one per fresh "
                    f"process (load average {alone.load})"
                )
                print(f"  MemoryStore.recall  ms {figures(alone.recall)}")
                print(f"    its CPU time      ms {figures(alone.cpu)}")
    return 0


def _run_alone(tree: Tree, now_ms: int, texts: list[str], tmp: Path) -> Timed:
    """Each query in a process of its own (its first recall: every word new to it)."""
    before = _load()
    timed = [_run_child(tree, now_ms, [text], tmp, None) for text in texts]
    return Timed(
        [t.recall[0] for t in timed],
        [t.cpu[0] for t in timed],
        [t.plain[0] for t in timed],
        f"{before} -> {_load()}",
    )


if __name__ == "__main__":
    raise SystemExit(main())
