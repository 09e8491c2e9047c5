"""``remember`` and ``import`` killed with SIGKILL mid-write: the store stays sound (no
damage, no false alarm from its journal), nothing is half there, a re-run completes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealmem.client import MemoryStore

from .conftest import kill_after, run, seeded, sound, start, timed

pytestmark = pytest.mark.slow

ROUNDS = 10
IMPORTED = 300


def contents(home: Path) -> list[str]:
    with MemoryStore.open(home / "store.db", readonly=True, author="reader") as store:
        rows = store.connection.execute("SELECT content FROM memories").fetchall()
    return [str(r[0]) for r in rows]


def doctor_ok(home: Path) -> None:
    checks = {c["name"]: c for c in json.loads(run(home, "doctor", "--json").stdout)["checks"]}
    for name in ("integrity", "journal", "fts"):
        assert checks[name]["ok"], checks[name]


def test_remember_killed_mid_write(tmp_path: Path) -> None:
    rng = seeded(1404)
    home = tmp_path / "home"
    run(home, "init")
    whole = timed(home, "remember", "lesson -1: the first one runs whole")
    texts = [f"lesson {n}: retry the flaky test" for n in range(ROUNDS)]
    for text in texts:  # aimed at the end of the run, where the write happens
        kill_after(start(home, "remember", text), rng.uniform(0.6, 1.1) * whole)
    sound([home])
    doctor_ok(home)
    before = contents(home)
    assert len(before) == len(set(before))  # each remember landed whole or not at all
    for text in sorted(set(texts) - set(before)):
        run(home, "remember", text)
    after = contents(home)
    assert sorted(after) == sorted([*texts, "lesson -1: the first one runs whole"])


def test_import_killed_mid_write(tmp_path: Path) -> None:
    rng = seeded(1405)
    source = tmp_path / "source"
    with MemoryStore.open(source / "store.db", author="source") as store:
        for n in range(IMPORTED):
            store.remember(f"imported fact {n}: the service listens on {8000 + n}", project="p")
        document = store.export()
    export = tmp_path / "export.json"
    export.write_text(json.dumps(document), encoding="utf-8")

    home = tmp_path / "home"
    run(home, "init")
    # aimed inside the shorter of a first import and a repeat (a killed import leaves some
    # of the file stored, so the next one is shorter): kills land inside one either way
    whole = min(timed(tmp_path / "timing", "import", str(export)) for _ in range(2))
    killed = sum(
        kill_after(start(home, "import", str(export)), rng.uniform(0.4, 1.0) * whole)
        for _ in range(ROUNDS)
    )
    assert killed >= 3, "the kills should land mostly inside an import"
    sound([home])
    doctor_ok(home)
    run(home, "import", str(export))
    after = contents(home)
    assert len(after) == IMPORTED
    assert set(after) == {
        f"imported fact {n}: the service listens on {8000 + n}" for n in range(IMPORTED)
    }
    doctor_ok(home)
