"""The folder reads the engine uses to move only what changed: seqs by listing, newest first."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.client.sync.folder import MANIFESTS_KEPT, FolderTransport
from sealmem.client.sync.transport import Transport
from tests.sync.conftest import every_file

WRITER = "b" * 26
OTHER = "c" * 26


def test_newest_seqs_and_manifests_read_only_what_is_asked(tmp_path: Path) -> None:
    folder = FolderTransport(tmp_path, "team1", ours=every_file)
    folder.prepare_new_team()
    assert folder.newest_seqs("proj") == {}
    assert folder.newest_manifest("proj", WRITER) is None
    for seq in range(1, MANIFESTS_KEPT + 2):
        folder.push("proj", WRITER, seq, f"w{seq}".encode(), {})
    folder.push("proj", OTHER, 7, b"o7", {})
    (folder.base / "snapshots" / "proj" / "not-a-kid").mkdir()
    assert folder.newest_seqs("proj") == {WRITER: MANIFESTS_KEPT + 1, OTHER: 7}
    assert folder.newest_manifest("proj", WRITER) == f"w{MANIFESTS_KEPT + 1}".encode()
    assert folder.writer_manifests("proj", WRITER) == [
        f"w{seq}".encode() for seq in range(MANIFESTS_KEPT + 1, 1, -1)
    ]
    assert folder.newest_manifest("proj", "../../etc") is None
    assert folder.writer_manifests("proj", "not-a-kid") == []


class _Unlisted(FolderTransport):
    """A folder that cannot list seqs cheaply (the interface's default)."""

    newest_seqs = Transport.newest_seqs


@pytest.mark.parametrize(
    ("recorded", "listed", "read"),
    [(3, False, True), (3, True, False), (4, True, False), (2, True, True), (0, True, True)],
    ids=["cannot-list", "listed-equal", "listed-behind", "listed-ahead", "none-recorded"],
)  # fmt: skip
def test_own_manifests_are_read_back_only_above_the_recorded_seq(
    tmp_path: Path, recorded: int, listed: bool, read: bool
) -> None:
    folder = (FolderTransport if listed else _Unlisted)(tmp_path, "team1", ours=every_file)
    folder.prepare_new_team()
    assert folder.manifests_above("proj", WRITER, 0) == []  # nothing anywhere
    for seq in (1, 2, 3):
        folder.push("proj", WRITER, seq, f"w{seq}".encode(), {})
    expected = [b"w3", b"w2", b"w1"] if read else []
    assert folder.manifests_above("proj", WRITER, recorded) == expected
