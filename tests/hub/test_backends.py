"""Choosing the hub's storage by URL: the embedded default, explicit URLs, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.hub.backends import default_blobs_url, open_storage
from sealmem.hub.blobs import BlobDir
from sealmem.hub.config import HubConfig
from sealmem.hub.sqlite_storage import SQLiteStorage
from sealmem.protocol.errors import InputError
from tests.support.cli import in_process

from .contract.world import ALICE, PROJECT, chunk, team


def test_a_directory_is_the_embedded_layout(tmp_path: Path) -> None:
    store = open_storage(str(tmp_path / "hub"))
    try:
        assert isinstance(store, SQLiteStorage)
        team(store, "t1")
        chunk(store, "t1", ALICE, b"one")
    finally:
        store.close()
    assert (tmp_path / "hub" / "hub.db").is_file()
    assert len(list((tmp_path / "hub" / "blobs" / "t1" / PROJECT / ALICE).iterdir())) == 1


def test_urls_place_the_database_and_the_blobs(tmp_path: Path) -> None:
    db = tmp_path / "meta" / "main.db"
    db.parent.mkdir()
    store = open_storage(f"sqlite://{db}", f"file://{tmp_path / 'chunks'}")
    try:
        assert isinstance(store.blobs, BlobDir)
        team(store, "t1")
        chunk(store, "t1", ALICE, b"one")
    finally:
        store.close()
    assert db.is_file()
    assert not (db.parent / "blobs").exists()
    assert (tmp_path / "chunks" / "t1").is_dir()


@pytest.mark.parametrize(
    ("db", "blobs", "named"),
    [
        ("redis://cache/0", None, "'redis'"),
        ("sqlite://somehost/hub.db", None, "local path"),
        ("DIR", "ftp://files/blobs", "'ftp'"),
    ],
)
def test_unknown_schemes_are_refused_by_name(
    tmp_path: Path, db: str, blobs: str | None, named: str
) -> None:
    with pytest.raises(InputError, match=named):
        open_storage(db.replace("DIR", str(tmp_path)), blobs)


def test_a_password_in_a_refused_url_is_not_repeated() -> None:
    with pytest.raises(InputError) as caught:
        open_storage("mysql://sealmem:hunter2-secret@db.example/hub", "file:///tmp/x")
    assert "hunter2" not in str(caught.value)


def test_metadata_without_blobs_beside_it_needs_a_blob_url() -> None:
    with pytest.raises(InputError, match="--blobs"):
        default_blobs_url("postgresql://db.example/hub")


def test_the_orphan_age_is_never_zero(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="orphan_min_age_s"):
        HubConfig(data_dir=tmp_path, orphan_min_age_s=0)
    with pytest.raises(InputError, match="--data DIR, or --db URL"):
        HubConfig()


def test_scrub_takes_its_storage_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "meta" / "hub.db"
    db.parent.mkdir()
    store = open_storage(f"sqlite://{db}", str(tmp_path / "chunks"))
    team(store, "t1")
    chunk(store, "t1", ALICE, b"one")
    store.close()
    monkeypatch.setenv("SEALMEM_HUB_DB", f"sqlite://{db}")
    monkeypatch.setenv("SEALMEM_HUB_BLOBS", f"file://{tmp_path / 'chunks'}")
    run = in_process(capsys, monkeypatch)

    done = run("hub", "scrub", "--json")

    assert done.code == 0, done.err
    assert done.json() == {"checked": 1, "damaged": 0, "missing": 0}
    monkeypatch.delenv("SEALMEM_HUB_DB")
    refused = run("hub", "scrub")
    assert refused.code != 0
    assert "--data DIR, or --db URL" in refused.err
    assert "Traceback" not in refused.err
