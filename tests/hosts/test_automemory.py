"""Claude Code's name for a project's folder under ``~/.claude/projects``, and the one
folder taken for a name over 200 characters (real folders in a tmp dir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.client.hosts.automemory import MAX_NAME, encode, locate
from sealmem.protocol.errors import InputError


def test_every_character_outside_ascii_letters_and_digits_is_a_dash() -> None:
    assert encode(Path("/home/ana/my_project.v2")) == "-home-ana-my-project-v2"
    assert encode(Path("/home/ana/café")) == "-home-ana-caf-"
    # JavaScript's replace sees a character outside the BMP as two UTF-16 units
    assert encode(Path("/srv/🚀x")) == "-srv---x"


def test_a_long_name_is_the_one_folder_holding_its_first_200_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    deep = tmp_path / ("a" * 120) / ("b" * 120)
    deep.mkdir(parents=True)
    name = encode(deep)
    assert len(name) > MAX_NAME
    with pytest.raises(InputError, match="does not exist"):
        locate(deep)
    folder = tmp_path / "claude" / "projects" / f"{name[:MAX_NAME]}-1k2j3h" / "memory"
    folder.mkdir(parents=True)
    assert locate(deep) == folder
    (tmp_path / "claude" / "projects" / f"{name[:MAX_NAME]}-zz9").mkdir()
    with pytest.raises(InputError, match="does not exist"):
        locate(deep)  # two candidates: neither is guessed
