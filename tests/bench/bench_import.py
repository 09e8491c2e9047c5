"""Import and export of a large store: records/s and peak RSS, beside their limits, same run.

    python tests/bench/bench_import.py                  # 100k memories
    python tests/bench/bench_import.py --memories 20000

1. An export file of N memories (~300 characters of text, 2 keywords each) is
   written in the export format.
2. ``sealmem import FILE`` into a fresh home, then ``sealmem export -o FILE``, each
   in its own process (the real CLI): wall time, records/s and peak RSS
   (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of that child alone).
3. Limits in child processes too: Python with sealmem's modules imported and a
   store opened (the floor of any sealmem command's RSS), and the import limit:
   ``json.loads`` of each entry plus one FTS5 ``executemany`` per 500 with plain
   ``sqlite3``, on the tables the limit was first measured on
   (``bench_merge.LIMIT_SCHEMA``: the first schema's ``memories``, four indexes, its
   full-text index).

sealmem's modules are byte-compiled before the first timed command, as installing a
package does (pip compiles what it installs): under ``PYTHONDONTWRITEBYTECODE`` (set on
this project's machines) every command would otherwise compile them again, a cost no
installed sealmem pays and the limits (the standard library, compiled) do not.

Prints the load average beside the figures (2 shared cores: compare rows of one run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench_merge import LIMIT_SCHEMA  # noqa: E402 - tests/bench is on sys.path as a script
from vocab import WORDS  # noqa: E402


def write_export(path: Path, n: int) -> None:
    from sealmem.protocol.hlc import Hlc
    from sealmem.protocol.record import Record, new_memory_id

    now = time.time_ns() // 1_000_000
    with path.open("w", encoding="utf-8") as out:
        out.write('{"format": "sealmem-export", "version": 1,\n"memories": [')
        for i in range(n):
            text = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(40))
            record = Record(
                id=new_memory_id(now - 100_000_000 + i, i.to_bytes(10, "big")),
                project="webapp",
                kind="note",
                content=f"{text} (item {i})",
                keywords=(WORDS[i % len(WORDS)], WORDS[(i + 5) % len(WORDS)]),
                importance=0.5,
                author="alice",
                editor="alice",
                created_at=now - 100_000_000,
                hlc=Hlc(now - 100_000_000, i % 60_000),
            )
            entry = {
                "record": record.to_wire(),
                "local": {"local_importance": 0.5, "seen_count": 1, "updated_at": now},
                "provenance": {"transport": "local"},
            }
            out.write(("\n" if i == 0 else ",\n") + json.dumps(entry, sort_keys=True))
        out.write('\n],\n"history": [],\n"supersedes": []}\n')


LIMIT_IMPORT = """
import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[2], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.executescript(sys.argv[3])  # bench_merge.LIMIT_SCHEMA
cols = ("id, project, kind, content, keywords, keywords_json, importance, local_importance, "
        "author, editor, created_at, hlc_wall, hlc_counter, origin, visibility, updated_at")
sql = f"INSERT INTO memories ({cols}) VALUES ({', '.join('?' * 16)})"
conn.execute("BEGIN")
rows = []
def flush():
    first = conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
    conn.executemany(sql, rows)
    conn.execute("INSERT INTO memories_fts (rowid, content, keywords) "
                 "SELECT rowid, content, keywords FROM memories WHERE rowid > ?", (first,))
    rows.clear()
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        if not line.startswith('{"local"'):
            continue
        r = json.loads(line.rstrip().rstrip(","))["record"]
        rows.append((r["id"], r["project"], r["kind"], r["content"], " ".join(r["keywords"]),
                     json.dumps(r["keywords"]), r["importance"] / 1000, r["importance"] / 1000,
                     r["author"], r["editor"], r["created_at"], r["hlc"][0], r["hlc"][1],
                     r["origin"], r["visibility"], 0))
        if len(rows) == 500:
            flush()
flush()
conn.execute("COMMIT")
"""

FLOOR = """
import sys
from sealmem.client import MemoryStore
from sealmem.client.cli import main
store = MemoryStore.open(sys.argv[1] + "/floor.db", author="x")
store.close()
"""


PRECOMPILE = """
import compileall, sys
import sealmem.client, sealmem.crypto, sealmem.hub, sealmem.protocol
packages = (sealmem.client, sealmem.crypto, sealmem.hub, sealmem.protocol)
sys.exit(0 if all(compileall.compile_dir(p, quiet=1) for m in packages for p in m.__path__) else 1)
"""

MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - start, use.ru_maxrss, use.ru_utime + use.ru_stime)
"""


def child(argv: list[str], home: Path) -> tuple[float, int, float]:
    """Wall time and peak RSS (bytes) of one command, measured by a wrapper process whose
    only child it is (``RUSAGE_CHILDREN`` keeps the largest child's peak)."""
    env = {**os.environ, "SEALMEM_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, *argv], env=env, check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), int(out[1]) * 1024, float(out[2])  # Linux: ru_maxrss in KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    args = parser.parse_args()
    n = args.memories
    sealmem = [str(Path(sys.executable).with_name("sealmem"))]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = root / "export.json"
        write_export(source, n)
        mb = source.stat().st_size / 1e6
        print(f"{n} memories, export file {mb:.0f} MB; load average {os.getloadavg()}")
        subprocess.run([sys.executable, "-c", PRECOMPILE], check=True)
        floor_s, floor_rss, _ = child([sys.executable, "-c", FLOOR, str(root)], root / "h0")
        limit_s, limit_rss, limit_cpu = child(
            [sys.executable, "-c", LIMIT_IMPORT, str(source), str(root / "limit.db"), LIMIT_SCHEMA],
            root / "h1",
        )
        imp_s, imp_rss, imp_cpu = child([*sealmem, "import", str(source)], root / "h2")
        exp_s, exp_rss, exp_cpu = child(
            [*sealmem, "export", "-o", str(root / "out.json")], root / "h2"
        )
        exported = sum(1 for line in (root / "out.json").open() if line.startswith('{"local"'))
        if exported != n:
            raise SystemExit(f"export holds {exported} memories, expected {n}")
    print(f"  {'':<46} {'records/s':>10} {'per CPU s':>10} {'seconds':>8} {'peak RSS':>9}")
    print(f"  {'floor: python + sealmem, open a store':<46} {'':>10} {'':>10} {floor_s:>8.1f} "
          f"{floor_rss / 1e6:>6.0f} MB")  # fmt: skip
    for name, seconds, rss, cpu in (
        ("limit: json.loads + FTS5 executemany (import)", limit_s, limit_rss, limit_cpu),
        ("sealmem import (CLI, streamed, batched)", imp_s, imp_rss, imp_cpu),
        ("sealmem export -o (CLI, streamed)", exp_s, exp_rss, exp_cpu),
    ):
        print(
            f"  {name:<46} {n / seconds:>10,.0f} {n / cpu:>10,.0f} {seconds:>8.1f} "
            f"{rss / 1e6:>6.0f} MB"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
