"""Choosing the hub's storage by URL: the embedded default, explicit URLs, refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.hub.config import HubConfig
from sealmem.hub.http.server import free_port
from sealmem.hub.storage.backends import default_blobs_url, open_storage
from sealmem.hub.storage.blobs import BlobDir
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.protocol.errors import InputError
from tests.support.cli import in_process

from .conftest import TEAM, TOKEN, HubWorld, wait_healthy
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


@pytest.mark.parametrize("group_commit", [True, False])
def test_the_group_commit_is_chosen_when_the_storage_opens(
    tmp_path: Path, group_commit: bool
) -> None:
    """Grouped, the writes go through the group commit (counted); plain, every write
    is a transaction of its own and the group commit counts nothing."""
    store = open_storage(str(tmp_path / "hub"), group_commit=group_commit)
    try:
        assert isinstance(store, SQLiteStorage)
        team(store, "t1")
        chunk(store, "t1", ALICE, b"one")
        assert (store.commits[1] >= 2) is group_commit  # the roster's write and the chunk row's
    finally:
        store.close()


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


@pytest.mark.slow
def test_hub_serve_places_its_storage_where_the_urls_say(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    db, blobs = tmp_path / "meta" / "hub.db", tmp_path / "chunks"
    db.parent.mkdir()
    env = {
        **os.environ,
        "SEALMEM_HUB_OPERATOR_TOKEN": TOKEN,
        "SEALMEM_HUB_DB": f"sqlite://{db}",
        "SEALMEM_HUB_BLOBS": f"file://{blobs}",
    }
    code = "import sys; from sealmem.client.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", code, "hub", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(homes, url, lambda k: HubTransport(url, TEAM, k, operator_token=TOKEN))
    try:
        wait_healthy(url)
        world.create()
        world.join("alice", "bob")
        world.nodes["alice"].remember("a note through a hub configured by URL")
        world.sync_all(2)
        assert "a note through a hub configured by URL" in {
            m.content for m in world.nodes["bob"].store.recent(limit=10, all_projects=True)
        }
    finally:
        world.close()
        proc.terminate()
        proc.wait(timeout=20)
    assert db.is_file()
    assert (blobs / TEAM / PROJECT).is_dir()
    assert not (db.parent / "blobs").exists()


def test_a_password_in_a_url_query_is_not_repeated() -> None:
    with pytest.raises(InputError) as caught:
        open_storage("mysql://db.example/hub?password=hunter2-secret", "file:///tmp/x")
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    "db",
    [
        "postgresql://hub:hunter2-secret@127.0.0.1:PORT/hub",
        "postgresql://hub@127.0.0.1:PORT/hub?password=hunter2-secret",
    ],
)
def test_hub_serve_never_prints_the_database_password(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start banner and the failure both name the database, never its password
    (they end up in a terminal, a service journal, a CI log)."""
    run = in_process(capsys, monkeypatch)
    db = db.replace("PORT", str(free_port()))  # nothing listens: the start fails
    done = run("hub", "serve", "--db", db, "--blobs", f"file://{tmp_path / 'blobs'}")
    assert done.code != 0
    assert "127.0.0.1" in done.err
    assert "hunter2" not in done.out + done.err


def test_a_libpq_key_value_string_is_not_taken_for_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--db "host=db password=..."`` is a PostgreSQL connection string, not a path: it
    is refused by name (without the password), and no directory named after it is made."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="postgresql://") as caught:
        open_storage("host=127.0.0.1 dbname=hub password=hunter2-secret")
    assert "hunter2" not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "db",
    [
        "postgresql://hub:hunter2-secret@127.0.0.1:no-port/hub",
        "postgresql://hub:hunter2-secret@[::1/hub",
    ],
)
def test_hub_serve_refuses_a_url_python_cannot_split_without_a_traceback(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad port or an unclosed IPv6 bracket: urllib raises ValueError on reading the
    URL; the banner and the refusal still come as sentences, without the password."""
    run = in_process(capsys, monkeypatch)
    done = run("hub", "serve", "--db", db, "--blobs", f"file://{tmp_path / 'blobs'}")
    assert done.code != 0
    assert "Traceback" not in done.out + done.err
    assert "hunter2" not in done.out + done.err
