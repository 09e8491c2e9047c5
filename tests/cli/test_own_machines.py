"""README "Sync your own machines" runs as written: a team of one in a folder, two homes
(two machines), the exact commands of its block; then a memory written on each machine
is on both after a sync."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")

pytestmark = pytest.mark.slow


def _block() -> list[tuple[list[str], str]]:
    """The section's shell lines, each with the machines it runs on (its comment says)."""
    section = README.split("## Sync your own machines", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found is not None
    steps: list[tuple[list[str], str]] = []
    machines: list[str] = []
    for line in found.group(1).splitlines():
        if line.startswith("#"):
            machines = [m for m in ("laptop", "desktop") if m in line.split(":")[0]]
            continue
        command = line.split("   #")[0].strip()
        assert machines, f"no machine named before {command!r}"
        steps.append((machines, command))
    return steps


def _run(tmp: Path, machine: str, command: str) -> str:
    env = {
        **os.environ, "HOME": str(tmp), "SEALMEM_HOME": str(tmp / machine),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }  # fmt: skip
    done = subprocess.run(
        ["bash", "-c", command], cwd=tmp, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{machine}: {command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_readme_team_of_one_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "Sync" / "sealmem").mkdir(parents=True)
    steps = _block()
    assert any("device join" in c for _, c in steps)
    for machines, command in steps:
        for machine in machines:
            _run(tmp_path, machine, command)
    _run(tmp_path, "laptop", 'sealmem remember "laptop: staging is read-only on Fridays" -p webapp')
    _run(tmp_path, "desktop", 'sealmem remember "desktop: the cache key is v7" -p webapp')
    for machine in ("laptop", "desktop", "laptop"):
        _run(tmp_path, machine, "sealmem sync")
    for machine in ("laptop", "desktop"):
        out = _run(tmp_path, machine, "sealmem recall 'staging cache key' -p webapp -n 5")
        assert "staging is read-only" in out, (machine, out)
        assert "cache key is v7" in out, (machine, out)
    listing = _run(tmp_path, "desktop", "sealmem device list")
    assert "desktop" in listing
    assert "this device" in listing
