"""Start-up time of the CLI: each light command as a whole process, against ``python -c pass``.

    python tests/bench/bench_startup.py [--runs 15]

Every command runs in a fresh ``SEALMEM_HOME`` holding a small store (20 memories),
through the installed ``sealmem`` script beside this Python.  The first run of each
command is reported apart ("first": files and bytecode maybe not in the page cache
yet); then ``--runs`` repeated runs give median and p95.  The baseline rows
(``python -c pass``, ``import sealmem.client.cli``) run in the same loop, so load
affects every row alike; the load average is printed beside the figures.  Targets
(issue 12): ``hook prompt`` under 150 ms, the other light commands under 300 ms.

At the end, ``python -X importtime`` of ``hook prompt`` and of ``list``: the modules
that cost the most (self time), and which heavy packages were imported at all.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
SEALMEM = str(Path(PY).parent / "sealmem")
HEAVY = ("nacl", "httpx", "starlette", "uvicorn", "mcp", "pydantic", "typer", "rich", "tomlkit")
PROMPT = json.dumps({"prompt": "how do we run the tests?", "session_id": "bench", "cwd": "/tmp"})


def commands() -> list[tuple[str, list[str], str | None]]:
    return [
        ("python -c pass (baseline)", [PY, "-c", "pass"], None),
        ("import sealmem.client.cli", [PY, "-c", "import sealmem.client.cli"], None),
        ("sealmem --version", [SEALMEM, "--version"], None),
        ("sealmem --help", [SEALMEM, "--help"], None),
        ("sealmem hook prompt", [SEALMEM, "hook", "prompt"], PROMPT),
        ("sealmem list", [SEALMEM, "list"], None),
        ("sealmem recall tests", [SEALMEM, "recall", "tests"], None),
    ]


def run(argv: list[str], stdin: str | None, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True, check=False)
    return (time.perf_counter() - start) * 1e3


def importtime(
    argv: list[str], stdin: str | None, env: dict[str, str]
) -> list[tuple[int, int, str]]:
    cmd = [PY, "-X", "importtime", "-m", "sealmem.client.cli", *argv[1:]]
    err = subprocess.run(cmd, input=stdin, env=env, capture_output=True, text=True).stderr
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line and "self" not in line:
            self_us, cumulative, name = line[len("import time:") :].split("|")
            rows.append((int(self_us), int(cumulative), name.rstrip()))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp()) / "home"
    env = {**os.environ, "SEALMEM_HOME": str(home)}
    for i in range(20):
        subprocess.run(
            [SEALMEM, "remember", f"memory {i}: run the tests with pytest -q", "--kind", "fact"],
            env=env,
            capture_output=True,
            check=True,
        )
    print(f"load average before: {os.getloadavg()}")
    table = commands()
    first = {name: run(argv, stdin, env) for name, argv, stdin in table}
    times: dict[str, list[float]] = {name: [] for name, _, _ in table}
    for _ in range(args.runs):  # interleaved: every row sees the same load
        for name, argv, stdin in table:
            times[name].append(run(argv, stdin, env))
    print(f"\n{args.runs} runs each, interleaved; load average after: {os.getloadavg()}")
    print("| command | first (ms) | median (ms) | p95 (ms) |")
    print("|---|---|---|---|")
    for name, _, _ in table:
        ordered = sorted(times[name])
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        print(f"| {name} | {first[name]:.0f} | {statistics.median(ordered):.0f} | {p95:.0f} |")

    for name, argv, stdin in table[4:6]:
        rows = importtime(argv, stdin, env)
        names = {row[2].strip() for row in rows}
        heavy = sorted(h for h in HEAVY if h in names)
        total = sum(row[0] for row in rows) / 1e3
        print(f"\n{name}: {len(rows)} modules, {total:.0f} ms of imports; heavy: {heavy or 'none'}")
        print("top self times (ms):")
        for self_us, cumulative, module in sorted(rows, reverse=True)[:12]:
            print(f"  {self_us / 1e3:6.1f}  (cumulative {cumulative / 1e3:6.1f})  {module.strip()}")


if __name__ == "__main__":
    main()
