"""A small filesystem that fills up under the members and their shared folder (a real
2 MiB tmpfs; skipped, with the reason, where mounting is not allowed): every failure is
one line, nothing is lost, and once space is freed the next syncs converge."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sealmem.protocol.errors import StoreError
from tests.support.cli import Run, in_process
from tests.sync.conftest import make_world
from tests.sync.test_sync_faults import fill, small_disk

from .conftest import converged, sound

pytestmark = pytest.mark.slow


def test_a_full_disk_under_members_and_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cli: Callable[..., Run] = in_process(capsys, monkeypatch)
    with small_disk(tmp_path / "disk", "2m") as disk:
        world = make_world(disk, "alice")
        try:
            admin, alice = world.nodes["admin"], world.nodes["alice"]
            written = {f"note {i}: the deploy runbook" for i in range(5)}
            for text in sorted(written):
                alice.remember(text)
            world.sync_all(rounds=1)
            filler = fill(disk)

            late = "written while the disk was full"
            with pytest.raises(StoreError, match="full"):
                alice.remember(late)
            for who in ("admin", "alice"):
                monkeypatch.setenv("SEALMEM_HOME", str(world.nodes[who].home))
                done = cli("sync")
                assert done.code == 1, done
                assert "Traceback" not in done.err, done.err
                lines = [line for line in done.err.splitlines() if line.strip()]
                assert len(lines) == 1, done.err
                assert "full" in lines[0] or "No space" in lines[0], lines[0]

            filler.unlink()
            alice.remember(late)
            written.add(late)
            sound([admin.home, alice.home])
            world.sync_all(rounds=2)
            converged([admin, alice], written)
        finally:
            world.close()
