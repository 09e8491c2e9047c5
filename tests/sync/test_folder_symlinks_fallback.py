"""The planted-link tests again, on the path fallback of platforms without ``dir_fd``.

Windows has neither ``O_NOFOLLOW`` nor descriptor-relative opens, so
:mod:`sealmem.client.sync.nofollow` checks each component by path there
(``lstat``, real-path containment) before using it.  Here the capability flag the
module reads is switched off, so every test of ``test_folder_symlinks`` runs
against that fallback on this machine, plus cases only the fallback has.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from sealmem.client.sync import nofollow
from sealmem.client.sync.folder import FolderTransport
from sealmem.client.sync.nofollow import SafeDir, Symlinked
from tests.sync.conftest import every_file

from . import test_folder_symlinks as planted

WRITER = planted.WRITER


@pytest.fixture(autouse=True)
def path_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nofollow, "DIR_HANDLES", False)


@pytest.fixture
def folder(tmp_path: Path) -> FolderTransport:
    share = tmp_path / "share"
    share.mkdir()
    transport = FolderTransport(share, "team1", ours=every_file)
    transport.prepare_new_team()
    return transport


def _fd_of(directory: SafeDir) -> int:
    return directory._fd


test_a_planted_writer_link_is_skipped_on_read_and_refused_on_write = (
    planted.test_a_planted_writer_link_is_skipped_on_read_and_refused_on_write
)
test_a_link_deeper_in_the_writer_folder_is_refused_too = (
    planted.test_a_link_deeper_in_the_writer_folder_is_refused_too
)
test_planted_keyring_and_request_links = planted.test_planted_keyring_and_request_links
test_a_linked_team_folder_is_refused = planted.test_a_linked_team_folder_is_refused
test_the_configured_folder_itself_may_be_a_link = (
    planted.test_the_configured_folder_itself_may_be_a_link
)
test_a_team_syncs_past_a_planted_link_and_writes_nothing_outside = (
    planted.test_a_team_syncs_past_a_planted_link_and_writes_nothing_outside
)


def test_the_fallback_holds_no_directory_handle(folder: FolderTransport) -> None:
    with SafeDir.open(folder.base.parent.parent, ("sealmem", "team1")) as here:
        assert here is not None
        assert _fd_of(here) == -1  # the fallback really runs: paths, not handles


def test_a_planted_file_link_is_not_read(folder: FolderTransport, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_bytes(b"my own file")
    folder.push("proj", WRITER, 1, b"m1", {})
    wdir = folder.base / "snapshots" / "proj" / WRITER
    (wdir / "manifest-000000000002.json").symlink_to(secret)
    with SafeDir.open(folder.base, ("snapshots", "proj", WRITER)) as opened:
        assert opened is not None
        assert opened.read("manifest-000000000002.json", 100) is None
        assert opened.read("manifest-000000000001.json", 100) == b"m1"
        assert opened.is_link("manifest-000000000002.json")
        opened.write("manifest-000000000002.json", b"m2")  # replaces the link itself
    assert secret.read_bytes() == b"my own file"
    assert (wdir / "manifest-000000000002.json").read_bytes() == b"m2"


def test_a_directory_swapped_for_a_link_after_opening_is_refused(
    folder: FolderTransport, tmp_path: Path
) -> None:
    target = tmp_path / "precious"
    target.mkdir()
    folder.push("proj", WRITER, 1, b"m1", {})
    wdir = folder.base / "snapshots" / "proj" / WRITER
    with SafeDir.open(folder.base, ("snapshots", "proj", WRITER)) as opened:
        assert opened is not None
        wdir.rename(tmp_path / "moved-away")
        wdir.symlink_to(target)  # swapped between opening and writing
        with pytest.raises(Symlinked):
            opened.write("planted.json", b"data")
        with pytest.raises(Symlinked):
            opened.names()
    assert list(target.iterdir()) == []


def test_the_module_imports_where_os_has_no_nofollow(monkeypatch: pytest.MonkeyPatch) -> None:
    """On Windows ``os`` has no O_NOFOLLOW nor O_DIRECTORY: the module must still load."""
    monkeypatch.delattr(os, "O_NOFOLLOW")
    monkeypatch.delattr(os, "O_DIRECTORY")
    spec = importlib.util.spec_from_file_location(
        "sealmem.client.sync._nofollow_probe", nofollow.__file__
    )
    assert spec is not None
    assert spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    probe.__package__ = "sealmem.client.sync"
    spec.loader.exec_module(probe)  # not put in sys.modules
    assert probe.DIR_HANDLES is False
