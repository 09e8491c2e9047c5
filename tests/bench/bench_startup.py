"""Start-up time of the CLI: each light command as a whole process, against ``python -c pass``.

    python tests/bench/bench_startup.py [--runs 15] [--baseline-ref main]

Every command runs in a fresh ``SEALMEM_HOME`` holding a small store (20 memories),
through the installed ``sealmem`` script beside this Python.  The first run of each
command is reported apart ("first": files and bytecode maybe not in the page cache
yet); then ``--runs`` repeated runs give median and p95 of the wall time, and the
median CPU time (user + system of the process, which load changes far less).  The baseline rows
(``python -c pass``, ``import sealmem.client.cli``) run in the same loop, so load
affects every row alike; the load average is printed beside the figures.  Targets
(issue 12): ``hook prompt`` under 150 ms, the other light commands under 300 ms.

With ``--baseline-ref REF`` the same commands also run from the source of REF
(``git archive`` into a temporary directory, imported through ``PYTHONPATH`` with the
same interpreter and packages; entry point as REF's pyproject names it), row by row
in the same loop.  Both sides then start as ``python -c 'import ENTRY; main()'``.

At the end, ``python -X importtime`` of ``hook prompt`` and of ``list``: the modules
that cost the most (self time), and which heavy packages were imported at all.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

PY = sys.executable
SEALMEM = str(Path(PY).parent / "sealmem")
HEAVY = ("nacl", "httpx", "starlette", "uvicorn", "mcp", "pydantic", "typer", "rich", "tomlkit")
PROMPT = json.dumps({"prompt": "how do we run the tests?", "session_id": "bench", "cwd": "/tmp"})


ROOT = Path(__file__).resolve().parents[2]
LIGHT: list[tuple[list[str], str | None]] = [
    (["--version"], None),
    (["--help"], None),
    (["hook", "prompt"], PROMPT),
    (["list"], None),
    (["recall", "tests"], None),
]


def commands() -> list[tuple[str, list[str], str | None]]:
    return [
        ("python -c pass (baseline)", [PY, "-c", "pass"], None),
        ("import sealmem.client.cli", [PY, "-c", "import sealmem.client.cli"], None),
        *((f"sealmem {' '.join(args)}", [SEALMEM, *args], stdin) for args, stdin in LIGHT),
    ]


def _entry(pyproject: str) -> str:
    module, _, func = tomllib.loads(pyproject)["project"]["scripts"]["sealmem"].partition(":")
    return f"import sys; from {module} import {func} as m; sys.exit(m())"


def ref_commands(ref: str) -> tuple[list[tuple[str, list[str], str | None]], dict[str, str]]:
    """The light commands run from ``ref``'s source, and the PYTHONPATH that finds it."""
    base = Path(tempfile.mkdtemp())
    src, pkg = base / "src", base / "path" / "sealmem"
    src.mkdir()
    pkg.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    for name in ("client", "hub", "crypto", "protocol"):
        (pkg / name).symlink_to(src / name)
    code = _entry((src / "pyproject.toml").read_text())
    rows = [(f"{ref}: sealmem {' '.join(a)}", [PY, "-c", code, *a], stdin) for a, stdin in LIGHT]
    here = [
        (
            f"this: sealmem {' '.join(a)}",
            [PY, "-c", _entry((ROOT / "pyproject.toml").read_text()), *a],
            stdin,
        )
        for a, stdin in LIGHT
    ]
    return here + rows, {"PYTHONPATH": str(base / "path")}


CPU: dict[str, list[float]] = {}


def run(argv: list[str], stdin: str | None, env: dict[str, str], name: str = "") -> float:
    """Wall ms of one whole process; its CPU ms (user + system) go to ``CPU[name]``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, capture_output=True, text=True, check=False)
    wall = (time.perf_counter() - start) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
    CPU.setdefault(name, []).append(cpu)
    return wall


def importtime(
    argv: list[str], stdin: str | None, env: dict[str, str]
) -> list[tuple[int, int, str]]:
    cmd = [PY, "-X", "importtime", "-c", _entry((ROOT / "pyproject.toml").read_text()), *argv[1:]]
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
    parser.add_argument("--baseline-ref", default=None)
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
    envs = {name: env for name, _, _ in table}
    if args.baseline_ref:
        extra, path_env = ref_commands(args.baseline_ref)
        table += extra
        for name, _, _ in extra:
            envs[name] = {**env, **path_env} if name.startswith(args.baseline_ref) else env
    first = {name: run(argv, stdin, envs[name]) for name, argv, stdin in table}
    times: dict[str, list[float]] = {name: [] for name, _, _ in table}
    for _ in range(args.runs):  # interleaved: every row sees the same load
        for name, argv, stdin in table:
            times[name].append(run(argv, stdin, envs[name], name))
    print(f"\n{args.runs} runs each, interleaved; load average after: {os.getloadavg()}")
    print("| command | first (ms) | median (ms) | p95 (ms) | CPU median (ms) |")
    print("|---|---|---|---|---|")
    for name, _, _ in table:
        ordered = sorted(times[name])
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        cpu = statistics.median(CPU[name])
        print(
            f"| {name} | {first[name]:.0f} | {statistics.median(ordered):.0f} | {p95:.0f}"
            f" | {cpu:.0f} |"
        )

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
