"""``sealmem demo``: the team demo over an embedded hub, run as the real console script."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sealmem.client.cli.demo import CORRECTION, DECISION, SECRET_WORDS, search_files

pytestmark = pytest.mark.slow

Sealmem = Callable[..., Any]


def _root(out: str) -> Path:
    match = re.search(r"in a temporary home (\S+)", out)
    assert match is not None, out
    return Path(match.group(1))


def test_the_demo_syncs_through_the_hub_and_leaves_nothing(sealmem: Sealmem, home: Path) -> None:
    run = sealmem("demo")
    assert run.code == 0, run.out + run.err
    assert re.search(r"hub runs on http://127\.0\.0\.1:\d+", run.out)
    assert re.search(r"approved alice \(\w+\)", run.out)
    assert re.search(r"approved bob \(\w+\)", run.out)
    assert "bob recalled alice's memory: author alice, signature verified, via hub." in run.out
    assert "author alice, signature verified, via hub, snapshot seq 1" in run.out
    assert "the correction now ranks above the old decision" in run.out
    assert "no plaintext in the hub's data" in run.out
    searches = re.findall(r"^\s+(\d+) files contain ", run.out, re.M)
    assert len(searches) >= 10
    assert set(searches) == {"0"}
    assert "Cleaned up." in run.out
    assert not _root(run.out).exists()
    assert not home.exists()  # the user's own SEALMEM_HOME was never touched


def test_the_kept_hub_data_holds_no_plaintext_but_the_stores_do(sealmem: Sealmem) -> None:
    run = sealmem("demo", "--keep")
    assert run.code == 0, run.out + run.err
    root = _root(run.out)
    try:
        assert "Everything is kept in" in run.out
        uuid7 = r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}"
        ids = re.findall(rf"'({uuid7})'", run.out)
        assert len(ids) == 2
        words = [DECISION, CORRECTION, *SECRET_WORDS, *ids]
        hub = root / "hub"
        assert (hub / "hub.db").is_file()
        assert any((hub / "blobs").rglob("*")), "the hub stored no chunks"
        # Our own scan of every byte under the hub's data directory, not the demo's.
        for path in (p for p in hub.rglob("*") if p.is_file()):
            data = path.read_bytes().lower()
            for word in words:
                assert word.lower().encode() not in data, f"{word!r} is in {path}"
        # The same words are in the members' stores: the scan can find them.
        for member in ("alice", "bob"):
            store = search_files(root / member, ["Frankfurt", ids[0], ids[1]])
            assert all(store.values()), f"{member}'s store lacks the memories: {store}"
        assert search_files(root / "admin", [CORRECTION]) == {CORRECTION: 0}  # admin never synced
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_hub_search_counts_files_case_insensitively(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"xx POSTGRESQL yy")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"postgresql and frankfurt")
    assert search_files(tmp_path, ["PostgreSQL", "Frankfurt", "retired"]) == {
        "PostgreSQL": 2,
        "Frankfurt": 1,
        "retired": 0,
    }
