"""Planted hole reports cost a writer a bounded read, however many there are.

Anyone with write access to the shared folder can leave files under
``holes/{project}/{writer}/``; each names chunk ids the writer then hashes again.  A
writer reads at most ``MAX_REPORTS`` of them per sync (a random draw, so planted names
cannot crowd a real reader's report out for good), each at most ``MAX_BUCKETS`` ids.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from sealmem.client.sync import folder_chunks
from sealmem.client.sync.folder_dirs import TeamDirs
from sealmem.protocol.manifest import MAX_BUCKETS

TEAM, PROJECT, WRITER = "acme", "webapp", "a" * 26


def _kid(i: int) -> str:
    return base64.b32encode(i.to_bytes(16, "big")).decode().lower()[:26]


def test_a_flood_of_planted_reports_is_read_a_bounded_number_at_a_time(tmp_path: Path) -> None:
    holes = tmp_path / "sealmem" / TEAM / "holes" / PROJECT / WRITER
    holes.mkdir(parents=True)
    planted = 3 * folder_chunks.MAX_REPORTS
    dirs = TeamDirs(tmp_path, TEAM)
    for i in range(planted):  # every report full, each with ids of its own
        ids = [os.urandom(32).hex() for _ in range(MAX_BUCKETS)]
        folder_chunks.report(dirs, PROJECT, WRITER, _kid(i), ids)

    found = folder_chunks.reported(dirs, PROJECT, WRITER)
    assert len(found) <= folder_chunks.MAX_REPORTS * MAX_BUCKETS < planted * MAX_BUCKETS
    assert found  # reports are still read: a sample, not none


def test_a_reader_that_lost_every_bucket_is_heard(tmp_path: Path) -> None:
    (tmp_path / "sealmem" / TEAM).mkdir(parents=True)
    dirs = TeamDirs(tmp_path, TEAM)
    ids = sorted(os.urandom(32).hex() for _ in range(MAX_BUCKETS))
    folder_chunks.report(dirs, PROJECT, WRITER, _kid(0), ids)
    assert folder_chunks.reported(dirs, PROJECT, WRITER) == frozenset(ids)


def test_an_honest_report_among_planted_ones_is_read_within_a_few_syncs(tmp_path: Path) -> None:
    holes = tmp_path / "sealmem" / TEAM / "holes" / PROJECT / WRITER
    holes.mkdir(parents=True)
    for i in range(1, 2 * folder_chunks.MAX_REPORTS):
        (holes / f"{_kid(i)}.json").write_text(json.dumps(["0" * 64]))
    honest = "f" * 64
    (holes / f"{_kid(0)}.json").write_text(json.dumps([honest]))
    dirs = TeamDirs(tmp_path, TEAM)
    assert any(honest in folder_chunks.reported(dirs, PROJECT, WRITER) for _ in range(40))
