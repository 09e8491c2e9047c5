"""Home directory, local identity, project names."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from sealmem.client import DEFAULT_PROJECT, paths
from sealmem.client.paths import ensure_home, local_author
from sealmem.client.project import current_project, sanitize_project
from sealmem.protocol.errors import StoreError
from sealmem.protocol.record import MEMBER_RE, PROJECT_RE


def test_home_follows_the_environment(home: Path) -> None:
    assert paths.home() == home
    assert not home.exists()
    assert ensure_home() == home
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert paths.store_path(home) == home / "store.db"


def test_home_default_is_the_platform_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.delenv("SEALMEM_HOME", raising=False)
    assert paths.home() == Path(platformdirs.user_data_dir("sealmem", appauthor=False))


def test_ensure_home_tightens_a_loose_directory(home: Path) -> None:
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    ensure_home()
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_local_author_is_stable_and_valid(tmp_path: Path) -> None:
    first = local_author(tmp_path)
    assert MEMBER_RE.match(first)
    assert len(first) == 26  # base32 of 16 bytes, like a member key's kid
    assert local_author(tmp_path) == first
    assert stat.S_IMODE((tmp_path / "identity.json").stat().st_mode) == 0o600
    assert local_author(tmp_path / "elsewhere") != first


def test_broken_identity_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "identity.json").write_text("{not json")
    with pytest.raises(StoreError, match="identity file"):
        local_author(tmp_path)
    (tmp_path / "identity.json").write_text('{"member_id": "Bad Id"}')
    with pytest.raises(StoreError, match="invalid member id"):
        local_author(tmp_path)


def test_current_project_uses_the_git_root(tmp_path: Path) -> None:
    repo = tmp_path / "My Web.Shop"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert current_project(deep) == "my-web.shop"
    plain = tmp_path / "Scratch_Dir"
    plain.mkdir()
    assert current_project(plain) == "scratch_dir"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Hello World", "hello-world"),
        ("..hidden", "hidden"),
        ("Ümlaut-Straße", "umlaut-strasse"),
        ("???", DEFAULT_PROJECT),
        ("日本", DEFAULT_PROJECT),
        ("x" * 100, "x" * 64),
    ],
)
def test_sanitize_project(raw: str, expected: str) -> None:
    result = sanitize_project(raw)
    assert result == expected
    assert PROJECT_RE.match(result)


def test_outside_git_the_project_is_the_directory_itself(tmp_path: Path) -> None:
    """What the README says: the cwd's own name, not a parent's; git's top dir inside git."""
    notes = tmp_path / "Notes" / "Ideas 2024"
    notes.mkdir(parents=True)
    assert current_project(notes) == "ideas-2024"
    assert current_project(notes.parent) == "notes"
    worktree = tmp_path / "Shop-Feature"
    (worktree / "src").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/shop-feature\n")
    assert current_project(worktree / "src") == "shop-feature"  # a worktree's .git file


def test_a_missing_member_key_is_not_replaced_silently(tmp_path: Path) -> None:
    """The identity names a member key's kid; the key file is gone: refusing beats
    minting a new key, which would leave the team's roster pointing at the lost one."""
    from sealmem.client.identity import member_key_path

    first = local_author(tmp_path)
    identity = (tmp_path / "identity.json").read_bytes()
    member_key_path(tmp_path).unlink()
    with pytest.raises(StoreError, match="Restore the old key"):
        local_author(tmp_path)
    assert (tmp_path / "identity.json").read_bytes() == identity
    assert first.encode() in identity
