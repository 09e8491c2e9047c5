"""A store of the pre-release builds (before the schema baseline) is refused with the way
out, and the way out (``sealmem recover``) works with this build alone: it reads the old
file and keeps its memories, their history and provenance, with derived data computed
again.  To be deleted with ``sealmem.client.store.prebaseline`` at the first release."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store.prebaseline import PreBaselineError
from sealmem.client.store.recover import recover
from tests.support.cli import in_process
from tests.support.old_schema import pre_baseline_store

NOW = 1_800_000_000_000
IDS = [f"019b76da-a80{i}-7000-8000-00000000000{i}" for i in range(3)]
MEMORIES = [
    (IDS[0], "the deploy script lives in ops/deploy.sh", "ann"),
    (IDS[1], "bob says the cache is keyed by the lockfile", "bob"),
    (IDS[2], "staging is rebuilt every night", "ann"),
]


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    pre_baseline_store(path, MEMORIES, NOW)
    return path


def test_every_open_refuses_it_with_the_way_out(old_store: Path) -> None:
    before = old_store.read_bytes()
    for readonly in (False, True):
        with pytest.raises(PreBaselineError, match="sealmem recover"):
            MemoryStore.open(old_store, author="ann", readonly=readonly)
    assert old_store.read_bytes() == before  # nothing was changed


def test_recover_copies_it_into_the_current_schema(old_store: Path) -> None:
    before = old_store.read_bytes()
    result = recover(old_store, now_ms=NOW)
    assert result.damaged is not None
    assert result.damaged.name.startswith("store.db.pre-baseline-")
    assert result.damaged.read_bytes() == before  # read only, kept beside the new store
    with MemoryStore.open(old_store, author="ann", clock=lambda: NOW) as store:
        assert {m.id for m in store.recent(all_projects=True)} == set(IDS)
        bobs = store.get(IDS[1])
        assert bobs.provenance.transport == "folder"
        assert bobs.provenance.verified
        assert [m.content for m in store.history(IDS[0])] == [f"{MEMORIES[0][1]} (draft)"]
        assert store.recall("lockfile cache", project="app")[0].memory.id == IDS[1]
        conn = store.connection
        assert tuple(conn.execute("SELECT memories FROM store_counts").fetchone()) == (3,)
        assert dict(conn.execute("SELECT editor, rows FROM own_counts")) == {"ann": 2, "bob": 1}
        assert {c.name: c.ok for c in store.doctor()}["derived"]
        stems = [r[0] for r in conn.execute("SELECT stems FROM memories")]
        assert "stale stems" not in stems
        store.remember("a new memory after the copy", project="app")


def test_the_cli_names_the_way_out_and_recover_takes_it(
    old_store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEALMEM_HOME", str(old_store.parent))
    run = in_process(capsys, monkeypatch)
    refused = run("list")
    assert refused.code != 0
    assert "sealmem recover" in refused.err
    assert "Traceback" not in refused.err
    assert run("recover").code == 0
    listed = run("list", "--all-projects")
    assert listed.code == 0
    assert "ops/deploy.sh" in listed.out
