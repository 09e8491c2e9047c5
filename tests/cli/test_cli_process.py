"""The installed ``sealmem`` console script, run as a real subprocess."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import SEALMEM, Run

pytestmark = pytest.mark.skipif(not SEALMEM.exists(), reason="console script not installed")

Sealmem = Callable[..., Run]


@pytest.mark.slow
def test_remember_recall_round_trip(sealmem: Sealmem) -> None:
    stored = sealmem("remember", "Feature flags live in LaunchDarkly.", "-k", "flags", "--json")
    assert stored.code == 0, stored.err
    memory_id = stored.json()["memory"]["id"]
    recalled = sealmem("recall", "where are feature flags", "--json")
    assert recalled.code == 0, recalled.err
    hits = recalled.json()["hits"]
    assert [h["id"] for h in hits] == [memory_id]
    assert hits[0]["content"] == "Feature flags live in LaunchDarkly."


@pytest.mark.slow
def test_expected_failures_are_one_line_without_traceback(sealmem: Sealmem) -> None:
    unknown = sealmem("show", "01900000-0000-7000-8000-000000000000")
    assert unknown.code == 1
    assert unknown.out == ""
    assert len(unknown.err.strip().splitlines()) == 1
    assert "Traceback" not in unknown.err

    forget_unknown = sealmem("forget", "01900000-0000-7000-8000-000000000000", "--reason", "x")
    assert forget_unknown.code == 1
    assert "Traceback" not in forget_unknown.err

    no_reason = sealmem("forget", "01900000-0000-7000-8000-000000000000")
    assert no_reason.code != 0
    assert "--reason" in no_reason.err
    assert "Traceback" not in no_reason.err

    oversize = sealmem("remember", "-", stdin="x" * 20_000)
    assert oversize.code == 1
    assert "Traceback" not in oversize.err
    assert len(oversize.err.strip().splitlines()) == 1


@pytest.mark.slow
def test_export_import_between_homes(sealmem: Sealmem, tmp_path: Path) -> None:
    ids = set()
    for text in ("Alpha is the auth service.", "Beta is the billing service."):
        ids.add(sealmem("remember", text, "--json").json()["memory"]["id"])
    dump = tmp_path / "export.json"
    assert sealmem("export", "-o", str(dump)).code == 0
    json.loads(dump.read_text())

    other = tmp_path / "other"
    env = {**os.environ, "SEALMEM_HOME": str(other)}
    import subprocess

    result = subprocess.run(
        [str(SEALMEM), "import", str(dump), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["added"] == 2
    listed = subprocess.run(
        [str(SEALMEM), "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert {m["id"] for m in json.loads(listed.stdout)["memories"]} == ids


@pytest.mark.slow
def test_doctor_passes_on_a_fresh_store(sealmem: Sealmem) -> None:
    assert sealmem("init").code == 0
    run = sealmem("doctor")
    assert run.code == 0, run.out + run.err
    assert "all good" in run.out


@pytest.mark.slow
def test_demo_tells_the_story_and_cleans_up(sealmem: Sealmem, home: Path) -> None:
    run = sealmem("demo")
    assert run.code == 0, run.out + run.err
    assert "supersedes" in run.out
    assert "the correction now ranks above the old decision" in run.out
    assert "Cleaned up." in run.out
    match = re.search(r"temporary home (\S+)", run.out)
    assert match is not None
    assert not Path(match.group(1)).exists()
    assert not home.exists()  # the user's own SEALMEM_HOME was never touched
